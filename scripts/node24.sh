#!/usr/bin/env bash
# The pinned Node 24 (scripts/node.sh 24): kept for what already calls it by this name.
exec "$(dirname "$0")/node.sh" 24 "$@"
