// libFuzzer target for the host side of the control protocol: any byte
// stream from a (hostile) guest must decode into frames or a clean error,
// never crash, never buffer more than one frame, and every payload parser
// must accept or reject any bytes without crashing.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "vm/protocol.h"

using namespace airlock::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  FrameDecoder decoder;
  // Feed in uneven chunks, as reads from a socket arrive.
  size_t chunk = size ? (data[0] % 17) + 1 : 1;
  while (!bytes.empty()) {
    auto part = bytes.substr(0, chunk);
    bytes.remove_prefix(part.size());
    auto ok = decoder.consume(part, [](Frame&& f) {
      if (f.payload.size() > kMaxPayload) std::abort();
      (void)decodeExec(f.payload);
      (void)decodeExit(f.payload);
      (void)decodeResize(f.payload);
      (void)decodeU32(f.payload);
      (void)decodeHello(f.payload);
    });
    if (!ok) break;
    if (decoder.pending() > kHeaderSize + kMaxPayload) std::abort();
  }
  return 0;
}
