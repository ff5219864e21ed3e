#!/usr/bin/env bash
# clang-format over the engine's C++ (engine-wasm/src, style in .clang-format).
# Usage: scripts/format-cpp.sh --write | --check
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system-deps.sh format
mapfile -t files < <(git ls-files 'engine-wasm/src/*.cc' 'engine-wasm/src/*.h')
case "${1:-}" in
  --write) clang-format -i "${files[@]}" ;;
  --check) clang-format --dry-run --Werror "${files[@]}" ;;
  *) echo "usage: scripts/format-cpp.sh --write | --check" >&2; exit 2 ;;
esac
