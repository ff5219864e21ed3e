// Deterministic data parallelism for the engine's hot loops (bundle adjustment, global
// positioning). Work over [0, count) is cut into fixed chunks whose boundaries depend only on
// the count and the chunk size, never on how many threads run them; a body that writes only
// what its chunk owns, with partial results combined in chunk order afterwards, therefore
// computes the same bits on one thread or eight.
//
// Threads come from one persistent pool (std::thread), sized by the device's hardware threads
// capped at kMaxParallelThreads (the caller counts as one). Builds without threads run every
// chunk in order on the caller: the plain wasm module, whose objects are the threaded module's
// (compiled with -pthread) linked against the single-threaded runtime, reports no threading
// support at run time.
#pragma once

#include <cstddef>
#include <functional>

namespace edgesfm {

// The most threads ParallelFor uses, caller included. The threaded wasm module starts exactly
// kMaxParallelThreads - 1 pool workers (PTHREAD_POOL_SIZE in CMakeLists.txt): a browser cannot
// start a thread while the calling worker is blocked inside an engine call.
constexpr int kMaxParallelThreads = 8;

// Chunks of `chunk_size` items (the last may be shorter) covering [0, count).
inline int NumChunks(size_t count, size_t chunk_size) {
  chunk_size = chunk_size == 0 ? 1 : chunk_size;
  return static_cast<int>((count + chunk_size - 1) / chunk_size);
}

// Runs body(chunk, begin, end) for every chunk c of [0, count), begin = c * chunk_size, end =
// min(count, begin + chunk_size), concurrently where the build and device have threads and
// serially otherwise. Returns when every chunk is done. If bodies throw, the exception of the
// lowest failing chunk is rethrown (other chunks may or may not have run). A ParallelFor
// inside a body, or one started while another thread's runs, is serial.
void ParallelFor(size_t count, size_t chunk_size,
                 const std::function<void(int chunk, size_t begin, size_t end)>& body);

// Threads ParallelFor uses at most: 1 in a build without threads.
int ParallelThreads();

// Caps ParallelThreads() (tests compare 1 against many); 0 removes the cap.
void SetParallelThreadLimit(int threads);

}  // namespace edgesfm
