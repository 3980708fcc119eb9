// libmosquitto (Debian libmosquitto-dev): the MQTT client behind the gateway.
#include <mosquitto.h>
