#!/usr/bin/env bash
# Runs the engine's native unit tests (one gtest binary per *_test.cc) through ctest.
# Builds the native tree first if needed (incremental). scripts/test.mjs parses ctest's
# summary line "N% tests passed, F tests failed out of T".
# Extra arguments go to ctest, e.g. engine-wasm/test-native.sh -R Ransac
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ ! -f "$here/build/native/CTestTestfile.cmake" ]]; then
  bash "$here/build.sh" --native-only >&2
else
  cmake --build "$here/build/native" -j "${EDGESFM_JOBS:-2}" >&2
fi
exec ctest --test-dir "$here/build/native" --output-on-failure -j "${EDGESFM_JOBS:-2}" "$@"
