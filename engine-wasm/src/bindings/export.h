// The binding convention: every engine module exposes a flat C API in
// src/bindings/<module>.cc, each function marked EDGESFM_EXPORT. Arrays go in and out
// through the wasm heap (the caller mallocs, fills, passes pointers, frees); results
// that vary in size are returned in an opaque result object with accessor functions
// and a *_free function. Bindings that compute catch what the engine throws and return a
// failure value, the message kept for edgesfm_last_error() (bindings/guard.h). See
// engine-wasm/README.md.
#pragma once

#ifdef __EMSCRIPTEN__
#include <emscripten/emscripten.h>
#define EDGESFM_EXPORT extern "C" EMSCRIPTEN_KEEPALIVE
#else
#define EDGESFM_EXPORT extern "C" __attribute__((visibility("default"), used))
#endif
