#ifndef CYAML_SHIM_H
#define CYAML_SHIM_H

// libyaml (Debian libyaml-dev, pkg-config yaml-0.1): the YAML reader of `ble write --file`.
#include <yaml.h>

#endif
