#!/usr/bin/env bash
# Builds the engine: (a) native Release static library + gtest binaries (ctest), and
# (b) the wasm modules engine-wasm/build/wasm/edgesfm-engine{,-mt}.{mjs,wasm} (plain and threaded).
# Incremental: a re-run with nothing changed only re-checks the globs (seconds).
# Usage: engine-wasm/build.sh [--native-only | --wasm-only]
# Env: EDGESFM_JOBS (default 2; the machine is shared).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
jobs="${EDGESFM_JOBS:-2}"
want_native=1
want_wasm=1
case "${1:-}" in
  --native-only) want_wasm=0 ;;
  --wasm-only) want_native=0 ;;
  "") ;;
  *) echo "usage: $0 [--native-only | --wasm-only]" >&2; exit 2 ;;
esac

bash "$root/scripts/system-deps.sh" engine

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

# Configures a build tree once; later runs go straight to the (incremental) build.
# A tree configured with another generator is reconfigured from scratch.
configure() {
  local dir="$1"; shift
  if [[ -f "$dir/CMakeCache.txt" ]]; then
    local cached; cached="$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$dir/CMakeCache.txt")"
    local wanted="Unix Makefiles"; [[ ${#generator[@]} -gt 0 ]] && wanted="Ninja"
    [[ "$cached" == "$wanted" ]] && return 0
    rm -rf "$dir"
  fi
  "$@" -S "$here" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release
}

if [[ $want_native -eq 1 ]]; then
  start=$SECONDS
  configure "$here/build/native" cmake
  cmake --build "$here/build/native" -j "$jobs"
  echo "engine: native build in $((SECONDS - start)) s (build/native)"
fi

if [[ $want_wasm -eq 1 ]]; then
  start=$SECONDS
  # Debian's emscripten needs its node modules (acorn) on NODE_PATH at link time.
  export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}
  configure "$here/build/wasm-cmake" emcmake cmake -DEDGESFM_WASM_OUTPUT_DIR="$here/build/wasm"
  cmake --build "$here/build/wasm-cmake" -j "$jobs"
  echo "engine: wasm build in $((SECONDS - start)) s (build/wasm/edgesfm-engine{,-mt}.{mjs,wasm})"
fi
