#include "util/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <limits>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#ifdef __EMSCRIPTEN__
#include <emscripten/threading.h>
#endif

namespace edgesfm {
namespace {

std::atomic<int> thread_limit{0};
// Set on every thread while it runs chunks: a nested ParallelFor runs serially.
thread_local bool inside_parallel_for = false;

int AvailableThreads() {
#ifdef __EMSCRIPTEN__
  // The same objects are linked with and without the pthread runtime: ask the one linked.
  if (!emscripten_has_threading_support()) return 1;
#endif
  const int hardware = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(hardware, 1, kMaxParallelThreads);
}

// Workers park on a condition variable between jobs; a job hands out chunk indices from an
// atomic counter to the caller and to as many workers as the job may use.
class ThreadPool {
 public:
  static ThreadPool& Get() {
    static ThreadPool pool;
    return pool;
  }

  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }

  // Serial when another thread's job holds the pool.
  bool TryRun(int num_chunks, int threads, const std::function<void(int)>& run_chunk) {
    std::unique_lock<std::mutex> busy(run_mutex_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    StartWorkers(threads - 1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &run_chunk;
      num_chunks_ = num_chunks;
      next_chunk_ = 0;
      open_places_ = std::min(threads - 1, static_cast<int>(workers_.size()));
      error_chunk_ = std::numeric_limits<int>::max();
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    RunChunks();
    std::exception_ptr error;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      open_places_ = 0;  // no latecomer joins a finished job
      done_.wait(lock, [&] { return running_workers_ == 0; });
      job_ = nullptr;
      error = error_;
    }
    if (error) std::rethrow_exception(error);
    return true;
  }

 private:
  void StartWorkers(int wanted) {
    while (static_cast<int>(workers_.size()) < wanted) {
      try {
        workers_.emplace_back([this] { WorkerLoop(); });
      } catch (const std::system_error&) {
        // The runtime has no thread to give (the wasm pool is spent): use those started.
        return;
      }
    }
  }

  void WorkerLoop() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (open_places_ == 0) continue;
      --open_places_;
      ++running_workers_;
      lock.unlock();
      RunChunks();
      lock.lock();
      if (--running_workers_ == 0) done_.notify_all();
    }
  }

  void RunChunks() {
    inside_parallel_for = true;
    for (int chunk; (chunk = next_chunk_.fetch_add(1)) < num_chunks_;) {
      try {
        (*job_)(chunk);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (chunk < error_chunk_) {
          error_chunk_ = chunk;
          error_ = std::current_exception();
        }
      }
    }
    inside_parallel_for = false;
  }

  std::mutex run_mutex_;  // one job at a time
  std::mutex mutex_;      // guards everything below but next_chunk_
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> workers_;
  bool stop_ = false;
  uint64_t generation_ = 0;
  const std::function<void(int)>* job_ = nullptr;
  int num_chunks_ = 0;
  std::atomic<int> next_chunk_{0};
  int open_places_ = 0;
  int running_workers_ = 0;
  int error_chunk_ = 0;
  std::exception_ptr error_;
};

}  // namespace

int ParallelThreads() {
  static const int available = AvailableThreads();
  const int limit = thread_limit.load();
  return limit > 0 ? std::min(limit, available) : available;
}

void SetParallelThreadLimit(int threads) { thread_limit.store(std::max(0, threads)); }

void ParallelFor(size_t count, size_t chunk_size,
                 const std::function<void(int chunk, size_t begin, size_t end)>& body) {
  chunk_size = std::max<size_t>(chunk_size, 1);
  const int num_chunks = NumChunks(count, chunk_size);
  const std::function<void(int)> run_chunk = [&](int chunk) {
    const size_t begin = static_cast<size_t>(chunk) * chunk_size;
    body(chunk, begin, std::min(count, begin + chunk_size));
  };
  const int threads = std::min(ParallelThreads(), num_chunks);
  if (threads > 1 && !inside_parallel_for &&
      ThreadPool::Get().TryRun(num_chunks, threads, run_chunk)) {
    return;
  }
  for (int chunk = 0; chunk < num_chunks; ++chunk) run_chunk(chunk);
}

}  // namespace edgesfm
