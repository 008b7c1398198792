// Native single-producer / single-consumer byte ring: the physical baseline for the TypeScript
// SharedArrayBuffer ring in src/runtime/channel/ (same design, same frame format).
//
//   struct Ring (shared by the two threads)
//   byte 0    +------------------------------------------------------------------+
//             | tail   atomic<uint32>  producer-owned: bytes ever written         |  one cache line
//   byte 64   | head   atomic<uint32>  consumer-owned: bytes ever consumed        |  one cache line
//   byte 128  | bell   seq, sleeping   (parked mode only: the consumer's doorbell) |  one cache line
//             | capacity, mask, data ─┐ (read-only after construction)            |
//             +-----------------------│------------------------------------------+
//   data area (64-byte aligned, capacity = 2^k bytes)
//             +------------------------------------------------------------------+
//             | [len|tag|payload...pad8] [len|tag|payload...pad8] ... [len|PAD]    |
//             +------------------------------------------------------------------+
//                  ^ head & mask                      ^ tail & mask
//
//   Producer (owned by one thread): tail, cachedHead     Consumer: head, cachedTail
//
// - The data area is a power of two; positions are uint32 counters that wrap naturally.
// - A frame is [int32 payloadLength][int32 tag][payload], padded to 8 bytes. It never wraps: when
//   it does not fit before the end of the data area the producer writes a PAD frame (tag 0) over
//   the rest and starts again at 0. A frame is at most capacity / 2 bytes.
// - The producer publishes tail with a release store after writing the frame; the consumer reads
//   tail with an acquire load before reading it (and symmetrically for head and reuse of space).
//   Each side re-reads the other's index only when its cached copy says full / empty.
// - In the throughput test both sides publish their index every kPublishEvery frames (and when
//   the ring looks full / empty), as the TypeScript ring's stage() / releaseDeferred() do.
// - Spinning loops do not use a pause instruction, like the JavaScript ring (which has none).
//
// Usage:
//   ring throughput <frames> <payloadBytes> [capacityBytes]  both threads spinning, frames/s
//   ring pingpong <iterations> [capacityBytes]                two rings, round trip p50/p99 (ns)
//   ring parked <iterations> [gapMicros] [capacityBytes]      one-way hand-off, reader parked on a futex
// A trailing --seq-cst publishes head and tail with seq-cst stores, like JavaScript's Atomics.store.
// Each prints one JSON object on stdout. The first 20 % (throughput) or 10 % (latency) of the
// frames are warm-up and are not measured.

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr uint32_t kHeaderBytes = 8;
constexpr uint32_t kAlign = 8;
constexpr int32_t kPadTag = 0;
constexpr uint32_t kDefaultCapacity = 1u << 20;

// --seq-cst: publish head and tail with sequentially consistent stores (an xchg on x86), which is
// what JavaScript's Atomics.store does, instead of release stores (a plain mov). For attribution.
bool gSeqCst = false;

void publish(std::atomic<uint32_t>& index, uint32_t value) {
  if (gSeqCst)
    index.store(value, std::memory_order_seq_cst);
  else
    index.store(value, std::memory_order_release);
}

uint32_t frameBytes(uint32_t payloadBytes) { return (kHeaderBytes + payloadBytes + kAlign - 1) & ~(kAlign - 1); }

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Ring {
  alignas(64) std::atomic<uint32_t> tail{0};
  alignas(64) std::atomic<uint32_t> head{0};
  // Doorbell for the parked mode, same protocol as src/runtime/channel/doorbell.ts.
  alignas(64) std::atomic<int32_t> bellSeq{0};
  std::atomic<int32_t> bellSleeping{0};
  uint32_t capacity;
  uint32_t mask;
  uint8_t* data;

  explicit Ring(uint32_t cap) : capacity(cap), mask(cap - 1) {
    data = static_cast<uint8_t*>(std::aligned_alloc(64, cap));
    std::memset(data, 0, cap);
  }
  ~Ring() { std::free(data); }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
};

// Frames between two publications of tail (or head) in the batched paths, as in the TS ring.
constexpr uint32_t kPublishEvery = 16;

class Producer {
 public:
  explicit Producer(Ring& r) : r_(r) {}

  // Returns where to write payloadBytes, or nullptr when the ring is full.
  uint8_t* reserve(uint32_t payloadBytes) {
    const uint32_t size = frameBytes(payloadBytes);
    uint32_t index = tail_ & r_.mask;
    const uint32_t contiguous = r_.capacity - index;
    const uint32_t needed = size <= contiguous ? size : contiguous + size;
    if (r_.capacity - (tail_ - cachedHead_) < needed) {
      publishStaged();  // staged frames must become visible, or the consumer never frees space
      cachedHead_ = r_.head.load(std::memory_order_acquire);
      if (r_.capacity - (tail_ - cachedHead_) < needed) return nullptr;
    }
    if (size > contiguous) {  // cover the rest of the data area with a PAD frame
      writeHeader(index, contiguous - kHeaderBytes, kPadTag);
      tail_ += contiguous;
      index = 0;
    }
    frameIndex_ = index;
    frameSize_ = size;
    std::memcpy(r_.data + index, &payloadBytes, 4);
    return r_.data + index + kHeaderBytes;
  }

  // Publishes the reserved frame (and the PAD frame before it, if any).
  void commit(int32_t tag) {
    std::memcpy(r_.data + frameIndex_ + 4, &tag, 4);
    tail_ += frameSize_;
    publishStaged();
  }

  // Completes the frame but publishes the tail only every kPublishEvery frames, like the
  // TypeScript ring's stage(); publishStaged() makes the rest visible.
  void stage(int32_t tag) {
    std::memcpy(r_.data + frameIndex_ + 4, &tag, 4);
    tail_ += frameSize_;
    if (++staged_ >= kPublishEvery) publishStaged();
  }

  void publishStaged() {
    if (published_ == tail_) return;
    published_ = tail_;
    staged_ = 0;
    publish(r_.tail, tail_);
  }

 private:
  void writeHeader(uint32_t index, uint32_t len, int32_t tag) {
    std::memcpy(r_.data + index, &len, 4);
    std::memcpy(r_.data + index + 4, &tag, 4);
  }

  Ring& r_;
  uint32_t tail_ = 0;
  uint32_t published_ = 0;
  uint32_t staged_ = 0;
  uint32_t cachedHead_ = 0;
  uint32_t frameIndex_ = 0;
  uint32_t frameSize_ = 0;
};

class Consumer {
 public:
  explicit Consumer(Ring& r) : r_(r) {}

  int32_t tag = 0;
  uint32_t length = 0;
  const uint8_t* payload = nullptr;

  bool hasFrame() {
    if (head_ != cachedTail_) return true;
    cachedTail_ = r_.tail.load(std::memory_order_acquire);
    return head_ != cachedTail_;
  }

  // Moves to the next frame; false when the ring is empty. Call release() after use.
  bool poll() {
    for (;;) {
      if (head_ == cachedTail_) {
        cachedTail_ = r_.tail.load(std::memory_order_acquire);
        if (head_ == cachedTail_) {
          flushRelease();
          return false;
        }
      }
      const uint8_t* frame = r_.data + (head_ & r_.mask);
      std::memcpy(&length, frame, 4);
      std::memcpy(&tag, frame + 4, 4);
      if ((tag & 0xff) == kPadTag) {
        head_ += kHeaderBytes + length;
        publish(r_.head, head_);
        continue;
      }
      payload = frame + kHeaderBytes;
      return true;
    }
  }

  void release() {
    head_ += frameBytes(length);
    flushRelease();
  }

  // Frees the frame's space lazily (every kPublishEvery frames, or when the ring is found empty).
  void releaseDeferred() {
    head_ += frameBytes(length);
    if (++deferred_ >= kPublishEvery) flushRelease();
  }

  void flushRelease() {
    if (released_ == head_) return;
    released_ = head_;
    deferred_ = 0;
    publish(r_.head, head_);
  }

 private:
  Ring& r_;
  uint32_t head_ = 0;
  uint32_t released_ = 0;
  uint32_t deferred_ = 0;
  uint32_t cachedTail_ = 0;
};

long futex(std::atomic<int32_t>* addr, int op, int32_t val) {
  return syscall(SYS_futex, reinterpret_cast<int32_t*>(addr), op, val, nullptr, nullptr, 0);
}

uint32_t parseCapacity(const char* arg) {
  const unsigned long want = arg ? std::strtoul(arg, nullptr, 10) : kDefaultCapacity;
  uint32_t c = 1024;
  while (c < want && c < (1u << 30)) c <<= 1;
  return c;
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t i = static_cast<size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

void printLatency(const char* mode, uint64_t iterations, uint64_t warmup, uint32_t capacity,
                  std::vector<double>& samples, const char* extra) {
  std::sort(samples.begin(), samples.end());
  double sum = 0;
  for (double s : samples) sum += s;
  std::printf(
      "{\"mode\":\"%s\",\"iterations\":%llu,\"warmup\":%llu,\"capacityBytes\":%u%s,\"p50Ns\":%.1f,"
      "\"p90Ns\":%.1f,\"p99Ns\":%.1f,\"p999Ns\":%.1f,\"minNs\":%.1f,\"maxNs\":%.1f,\"meanNs\":%.1f}\n",
      mode, static_cast<unsigned long long>(iterations), static_cast<unsigned long long>(warmup), capacity,
      extra, percentile(samples, 0.5), percentile(samples, 0.9), percentile(samples, 0.99),
      percentile(samples, 0.999), samples.front(), samples.back(), sum / static_cast<double>(samples.size()));
}

// Producer and consumer both spin; the consumer times frames [warmup, warmup + frames).
int throughput(uint64_t frames, uint32_t payloadBytes, uint32_t capacity) {
  if (payloadBytes < 4 || frameBytes(payloadBytes) > capacity / 2) {
    std::fprintf(stderr, "payloadBytes must be >= 4 and fit half the ring\n");
    return 2;
  }
  const uint64_t warmup = frames / 4;
  const uint64_t total = warmup + frames;
  auto ring = std::make_unique<Ring>(capacity);
  std::thread producer([&] {
    Producer p(*ring);
    std::vector<uint8_t> payload(payloadBytes, 0x5a);
    for (uint64_t i = 0; i < total;) {
      uint8_t* at = p.reserve(payloadBytes);
      if (at == nullptr) continue;
      std::memcpy(at, payload.data(), payloadBytes);
      const uint32_t seq = static_cast<uint32_t>(i);
      std::memcpy(at, &seq, 4);
      p.stage(1);
      i++;
    }
    p.publishStaged();
  });
  Consumer c(*ring);
  uint64_t errors = 0;
  int64_t t0 = nowNs();
  for (uint64_t i = 0; i < total;) {
    if (!c.poll()) continue;
    uint32_t seq;
    std::memcpy(&seq, c.payload, 4);
    if (seq != static_cast<uint32_t>(i)) errors++;
    c.releaseDeferred();
    if (++i == warmup) t0 = nowNs();
  }
  const int64_t t1 = nowNs();
  producer.join();
  const double seconds = static_cast<double>(t1 - t0) / 1e9;
  std::printf(
      "{\"mode\":\"throughput\",\"frames\":%llu,\"warmupFrames\":%llu,\"payloadBytes\":%u,\"frameBytes\":%u,"
      "\"capacityBytes\":%u,\"seconds\":%.6f,\"framesPerSec\":%.0f,\"errors\":%llu}\n",
      static_cast<unsigned long long>(frames), static_cast<unsigned long long>(warmup), payloadBytes,
      frameBytes(payloadBytes), capacity, seconds, static_cast<double>(frames) / seconds,
      static_cast<unsigned long long>(errors));
  return errors == 0 ? 0 : 1;
}

// Ring A carries pings to an echo thread, ring B the pongs back; both threads spin. One clock
// read per iteration: sample i = t(i + 1) - t(i), one full round trip.
int pingpong(uint64_t iterations, uint32_t capacity) {
  const uint64_t warmup = std::max<uint64_t>(iterations / 10, 1000);
  const uint64_t total = warmup + iterations;
  auto a = std::make_unique<Ring>(capacity);
  auto b = std::make_unique<Ring>(capacity);
  std::thread echo([&] {
    Consumer in(*a);
    Producer out(*b);
    for (uint64_t i = 0; i < total; i++) {
      while (!in.poll()) {
      }
      uint64_t seq;
      std::memcpy(&seq, in.payload, 8);
      in.release();
      uint8_t* at;
      while ((at = out.reserve(8)) == nullptr) {
      }
      std::memcpy(at, &seq, 8);
      out.commit(1);
    }
  });
  Producer out(*a);
  Consumer in(*b);
  std::vector<double> samples;
  samples.reserve(iterations);
  uint64_t errors = 0;
  int64_t prev = nowNs();
  for (uint64_t i = 0; i < total; i++) {
    uint8_t* at;
    while ((at = out.reserve(8)) == nullptr) {
    }
    std::memcpy(at, &i, 8);
    out.commit(1);
    while (!in.poll()) {
    }
    uint64_t seq;
    std::memcpy(&seq, in.payload, 8);
    if (seq != i) errors++;
    in.release();
    const int64_t now = nowNs();
    if (i >= warmup) samples.push_back(static_cast<double>(now - prev));
    prev = now;
  }
  echo.join();
  printLatency("pingpong", iterations, warmup, capacity, samples, "");
  return errors == 0 ? 0 : 1;
}

// The writer sleeps gapMicros between frames so the reader is parked on its doorbell each time;
// each frame carries its send time and the reader records now - sendTime after waking.
int parked(uint64_t iterations, uint32_t gapMicros, uint32_t capacity) {
  const uint64_t warmup = std::max<uint64_t>(iterations / 10, 10);
  const uint64_t total = warmup + iterations;
  auto ring = std::make_unique<Ring>(capacity);
  std::vector<double> samples;
  samples.reserve(iterations);
  std::thread reader([&] {
    Consumer c(*ring);
    for (uint64_t i = 0; i < total;) {
      if (c.poll()) {
        const int64_t now = nowNs();
        int64_t sent;
        std::memcpy(&sent, c.payload, 8);
        c.release();
        if (i >= warmup) samples.push_back(static_cast<double>(now - sent));
        i++;
        continue;
      }
      const int32_t seq = ring->bellSeq.load();
      ring->bellSleeping.store(1);
      if (!c.hasFrame()) futex(&ring->bellSeq, FUTEX_WAIT_PRIVATE, seq);
      ring->bellSleeping.store(0);
    }
  });
  Producer p(*ring);
  for (uint64_t i = 0; i < total; i++) {
    std::this_thread::sleep_for(std::chrono::microseconds(gapMicros));
    uint8_t* at;
    while ((at = p.reserve(8)) == nullptr) {
    }
    const int64_t sent = nowNs();
    std::memcpy(at, &sent, 8);
    p.commit(1);
    if (ring->bellSleeping.load() != 0) {
      ring->bellSeq.fetch_add(1);
      futex(&ring->bellSeq, FUTEX_WAKE_PRIVATE, 1);
    }
  }
  reader.join();
  char extra[64];
  std::snprintf(extra, sizeof extra, ",\"gapMicros\":%u", gapMicros);
  printLatency("parked", iterations, warmup, capacity, samples, extra);
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: ring throughput <frames> <payloadBytes> [capacityBytes]\n"
               "       ring pingpong <iterations> [capacityBytes]\n"
               "       ring parked <iterations> [gapMicros] [capacityBytes]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[argc - 1], "--seq-cst") == 0) {
    gSeqCst = true;
    argc--;
  }
  if (argc < 3) return usage();
  const std::string mode = argv[1];
  const uint64_t n = std::strtoull(argv[2], nullptr, 10);
  if (n == 0) return usage();
  if (mode == "throughput" && argc >= 4) {
    return throughput(n, static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10)),
                      parseCapacity(argc >= 5 ? argv[4] : nullptr));
  }
  if (mode == "pingpong") return pingpong(n, parseCapacity(argc >= 4 ? argv[3] : nullptr));
  if (mode == "parked") {
    const uint32_t gap = argc >= 4 ? static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10)) : 200;
    return parked(n, gap, parseCapacity(argc >= 5 ? argv[4] : nullptr));
  }
  return usage();
}
