#!/usr/bin/env bash
# npm run bench:setup: installs what the bench's baselines need, from Debian's packages:
# redis-server (the durable-write baseline of `send`) and wrk (the load generator of
# `poll`). Without them the bench still runs, and its table, JSON and HTML report say
# which baselines it skipped and why. As root it installs them with apt-get; otherwise it
# installs nothing and prints the command to run with sudo (exit status 1).
set -euo pipefail

# The package and the command have the same name for both.
wanted=(redis-server wrk)
missing=()
for tool in "${wanted[@]}"; do
  if path=$(command -v "$tool"); then
    echo "bench:setup: $tool is installed ($path)"
  else
    missing+=("$tool")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "bench:setup: nothing to install; every baseline can run"
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "bench:setup: missing ${missing[*]}, and this is not a Debian or Ubuntu machine (no apt-get): install them with its package manager" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "bench:setup: missing ${missing[*]}; not root, so nothing was installed. Run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "bench:setup: installing ${missing[*]} with apt-get"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q "${missing[@]}"
echo "bench:setup: done. The bench starts its own redis-server (a free loopback port, a temporary directory); a system redis service that the package may have started is not needed (sudo systemctl disable --now redis-server)."
