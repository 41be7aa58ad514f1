// Which of a gateway's devices a session runs on: the device (backend.device)
// or the alternate, a second RDMA device on another link
// (backend.alternateDevice). A client whose device has no automatic path
// migration (rxe) fails over to the alternate at the application level: a
// new handshake there and a resend (docs/protocol.md 1.11). Order sessions
// (orders/order_service.h) and recovery sessions (feed/recovery_service.h)
// use the same two values, as does the handshake's `device` field.
#pragma once

#include <cstdint>

namespace qpgate::verbs {

inline constexpr std::uint8_t kPrimaryDevice = 0;
inline constexpr std::uint8_t kAlternateDevice = 1;

}  // namespace qpgate::verbs
