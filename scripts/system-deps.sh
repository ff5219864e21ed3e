#!/usr/bin/env bash
# Installs the Debian packages a part of the project needs, when missing.
# Usage: scripts/system-deps.sh GROUP...   groups: engine, browser, webgpu, colmap, format, video
# As root it runs apt-get; otherwise it prints the exact command to run and fails.
set -euo pipefail
declare -A PKGS=(
  [engine]="emscripten libeigen3-dev cmake g++ libgtest-dev"
  [browser]="chromium"
  [webgpu]="chromium libvulkan1"
  [colmap]="colmap"
  [format]="clang-format"
  [video]="ffmpeg"
)
missing=()
for group in "$@"; do
  [[ -n "${PKGS[$group]:-}" ]] || { echo "system-deps: unknown group '$group'" >&2; exit 2; }
  for p in ${PKGS[$group]}; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
# De-duplicate while keeping order.
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | awk '!seen[$0]++')
if [[ $(id -u) -ne 0 ]]; then
  echo "system-deps: missing Debian packages. Run: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "system-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
