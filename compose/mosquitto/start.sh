#!/bin/sh
# Builds Mosquitto's password file and ACL, then runs Mosquitto. The bridge and
# monitor accounts come from .env (MQTT_BRIDGE_PASSWORD, MQTT_MONITOR_PASSWORD);
# trainer accounts from trainers.passwd and trainers.acl next to this file, made
# by `curvestream mqtt add-user PROJECT`. Restart the service to load new ones.
set -eu
conf_dir=${MOSQUITTO_CONFIG_DIR:-/mosquitto/config}
auth_dir=${MOSQUITTO_AUTH_DIR:-/mosquitto/auth}
: "${MQTT_BRIDGE_PASSWORD:?set MQTT_BRIDGE_PASSWORD in .env}"
: "${MQTT_MONITOR_PASSWORD:?set MQTT_MONITOR_PASSWORD in .env}"

umask 077
mkdir -p "$auth_dir"
if [ -f "$conf_dir/trainers.passwd" ]; then
    cp "$conf_dir/trainers.passwd" "$auth_dir/passwd"
else
    : > "$auth_dir/passwd"
fi
mosquitto_passwd -b "$auth_dir/passwd" curvestream-bridge "$MQTT_BRIDGE_PASSWORD"
mosquitto_passwd -b "$auth_dir/passwd" monitor "$MQTT_MONITOR_PASSWORD"
cp "$conf_dir/acl" "$auth_dir/acl"
if [ -f "$conf_dir/trainers.acl" ]; then
    printf '\n' >> "$auth_dir/acl"
    cat "$conf_dir/trainers.acl" >> "$auth_dir/acl"
fi
if [ "$(id -u)" = 0 ] && id mosquitto >/dev/null 2>&1; then
    chown -R mosquitto:mosquitto "$auth_dir"  # Mosquitto drops to its own user
fi
exec mosquitto -c "$conf_dir/mosquitto.conf"
