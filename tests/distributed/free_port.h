// A loopback port for a test's rendezvous, chosen by the kernel: a port
// computed from the process id can fall in the ephemeral range, where a
// connection of a test running beside it (Gloo opens several a rank) may
// hold it.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/catch.h"

namespace paradnn::test {

// A port no socket on 127.0.0.1 is bound to now; the kernel picks it from
// the ephemeral range at random, so another test's next connection is
// unlikely to take it in the moment before rank 0 binds it.
inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t size = sizeof(addr);
  const bool bound =
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size) == 0;
  close(fd);
  REQUIRE(bound);
  return ntohs(addr.sin_port);
}

}  // namespace paradnn::test
