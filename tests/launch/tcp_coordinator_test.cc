// The bootstrap coordinator over loopback TCP: the exchange works, and every
// kind of bad peer (garbage, lies, silence, a connection cut mid-message)
// ends in an error that names it, quickly, never in a hang. No RDMA needed.
#include "launch/tcp_coordinator.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "launch/bounded_socket_io.h"
#include "launch/coordinator_frame.h"

namespace tensorwire::launch {
namespace {

using std::chrono::milliseconds;

std::unique_ptr<TcpCoordinator> make(const std::string& address, RankId rank, uint32_t world,
                                     milliseconds timeout = milliseconds(5000)) {
  Result<std::unique_ptr<TcpCoordinator>> c =
      TcpCoordinator::create({address, rank, world, timeout});
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  return c.is_ok() ? std::move(*c) : nullptr;
}

std::string root_address(const TcpCoordinator& root) {
  return "127.0.0.1:" + std::to_string(root.port());
}

// A raw TCP client standing in for a misbehaving rank.
Socket raw_connect(uint16_t port) {
  Result<Socket> s = connect_before(Ipv4Endpoint{{htonl(INADDR_LOOPBACK)}, port},
                                    SteadyClock::now() + milliseconds(5000), "test coordinator");
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? std::move(*s) : Socket();
}

void raw_send(const Socket& s, std::span<const std::byte> bytes) {
  ASSERT_TRUE(send_all(s, bytes, SteadyClock::now() + milliseconds(5000), "test").is_ok());
}

std::vector<std::byte> frame(FrameType type, uint32_t rank, const std::vector<std::byte>& body) {
  const auto head = encode_frame_header({type, rank, static_cast<uint32_t>(body.size())});
  // Sized up front: GCC 12 warns falsely (-Warray-bounds) on vector::insert here.
  std::vector<std::byte> out(head.size() + body.size());
  std::memcpy(out.data(), head.data(), head.size());
  if (!body.empty()) std::memcpy(out.data() + head.size(), body.data(), body.size());
  return out;
}

std::vector<std::byte> text(std::string_view s) {
  std::vector<std::byte> out;
  for (char c : s) out.push_back(std::byte(static_cast<unsigned char>(c)));
  return out;
}

TEST(TcpCoordinator, AllGatherAndBarrierAcrossThreeRanks) {
  auto root = make("127.0.0.1:0", 0, 3);
  ASSERT_NE(root, nullptr);
  ASSERT_NE(root->port(), 0);
  std::vector<std::unique_ptr<TcpCoordinator>> ranks;
  ranks.push_back(std::move(root));
  for (RankId r = 1; r < 3; ++r) ranks.push_back(make(root_address(*ranks[0]), r, 3));
  std::vector<std::vector<std::string>> got(3);
  std::vector<Status> errors(3);
  std::vector<std::thread> threads;
  for (RankId r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      Status st = ranks[r]->join();
      if (st.is_ok()) {
        Result<std::vector<std::string>> all = ranks[r]->all_gather("addr-of-" + std::to_string(r));
        if (all.is_ok()) {
          got[r] = *all;
        } else {
          st = all.status();
        }
      }
      if (st.is_ok()) st = ranks[r]->barrier();
      if (st.is_ok()) {
        Result<std::vector<std::string>> again = ranks[r]->all_gather(std::string(r, 'x'));
        if (!again.is_ok() || (*again)[2] != "xx") st = again.status();
      }
      errors[r] = st;
    });
  }
  for (auto& t : threads) t.join();
  for (RankId r = 0; r < 3; ++r) {
    EXPECT_TRUE(errors[r].is_ok()) << errors[r].to_string();
    EXPECT_EQ(got[r], (std::vector<std::string>{"addr-of-0", "addr-of-1", "addr-of-2"}));
  }
}

// A world of `world` coordinators on loopback, joined.
std::vector<std::unique_ptr<TcpCoordinator>> joined_world(uint32_t world) {
  std::vector<std::unique_ptr<TcpCoordinator>> out;
  out.push_back(make("127.0.0.1:0", 0, world));
  for (RankId r = 1; r < world; ++r) out.push_back(make(root_address(*out[0]), r, world));
  std::vector<std::thread> joins;
  for (auto& c : out) joins.emplace_back([&c] { EXPECT_TRUE(c->join().is_ok()); });
  for (auto& t : joins) t.join();
  return out;
}

// Polls a started barrier until it ends; nullopt if it has not within 10 s.
std::optional<Status> poll_until_ended(TcpCoordinator& c) {
  const Deadline give_up = SteadyClock::now() + std::chrono::seconds(10);
  while (SteadyClock::now() < give_up) {
    if (std::optional<Status> st = c.poll_barrier()) return st;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return std::nullopt;
}

TEST(TcpCoordinator, ADrivenBarrierEndsOnlyOnceEveryRankArrivedAllDrivenFromOneThread) {
  auto w = joined_world(3);
  ASSERT_TRUE(w[0]->start_barrier(milliseconds(5000)).is_ok());
  ASSERT_TRUE(w[1]->start_barrier(milliseconds(5000)).is_ok());
  EXPECT_TRUE(w[1]->barrier_pending());
  EXPECT_EQ(w[1]->start_barrier(milliseconds(5000)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w[0]->all_gather("x").status().code(), StatusCode::kInvalidArgument);
  // Rank 2 has not arrived: however often the others poll, the barrier holds.
  for (int i = 0; i < 50; ++i) {
    EXPECT_FALSE(w[0]->poll_barrier().has_value());
    EXPECT_FALSE(w[1]->poll_barrier().has_value());
    std::this_thread::sleep_for(milliseconds(1));
  }
  // What an idle rank may sleep on: rank 0 has read rank 1's arrival while
  // polling and waits to read from rank 2 only; a member waits for rank 0.
  EXPECT_EQ(w[0]->barrier_fds().size(), 1u);
  EXPECT_EQ(w[1]->barrier_fds().size(), 1u);
  EXPECT_TRUE(w[2]->barrier_fds().empty());
  ASSERT_TRUE(w[2]->start_barrier(milliseconds(5000)).is_ok());
  std::vector<std::optional<Status>> ended(3);
  const Deadline give_up = SteadyClock::now() + std::chrono::seconds(10);
  while ((!ended[0] || !ended[1] || !ended[2]) && SteadyClock::now() < give_up) {
    for (RankId r = 0; r < 3; ++r) {
      if (!ended[r]) ended[r] = w[r]->poll_barrier();
    }
  }
  for (RankId r = 0; r < 3; ++r) {
    ASSERT_TRUE(ended[r].has_value()) << "rank " << r;
    EXPECT_TRUE(ended[r]->is_ok()) << ended[r]->to_string();
    EXPECT_FALSE(w[r]->barrier_pending());
    EXPECT_TRUE(w[r]->barrier_fds().empty());
  }
  // The same wire exchange as the blocking barrier: rank 0 driven, the others
  // blocking, then an all-gather whose sequence numbers still agree.
  ASSERT_TRUE(w[0]->start_barrier(milliseconds(5000)).is_ok());
  std::vector<Result<std::vector<std::string>>> got(3, Status(StatusCode::kInternal, "unset"));
  std::vector<std::thread> members;
  for (RankId r = 1; r < 3; ++r) {
    members.emplace_back([&, r] {
      Status st = w[r]->barrier();
      got[r] = st.is_ok() ? w[r]->all_gather(std::to_string(r)) : st;
    });
  }
  std::optional<Status> root = poll_until_ended(*w[0]);
  ASSERT_TRUE(root.has_value());
  EXPECT_TRUE(root->is_ok()) << root->to_string();
  got[0] = w[0]->all_gather("0");
  for (auto& t : members) t.join();
  for (RankId r = 0; r < 3; ++r) {
    ASSERT_TRUE(got[r].is_ok()) << got[r].status().to_string();
    EXPECT_EQ(*got[r], (std::vector<std::string>{"0", "1", "2"}));
  }
}

TEST(TcpCoordinator, DrivenMembersAndABlockingRankZeroAgree) {
  auto w = joined_world(3);
  Status root = Status(StatusCode::kInternal, "unset");
  std::thread t([&] { root = w[0]->barrier(); });
  ASSERT_TRUE(w[1]->start_barrier(milliseconds(5000)).is_ok());
  ASSERT_TRUE(w[2]->start_barrier(milliseconds(5000)).is_ok());
  std::optional<Status> one = poll_until_ended(*w[1]);
  std::optional<Status> two = poll_until_ended(*w[2]);
  t.join();
  EXPECT_TRUE(root.is_ok()) << root.to_string();
  ASSERT_TRUE(one.has_value() && two.has_value());
  EXPECT_TRUE(one->is_ok()) << one->to_string();
  EXPECT_TRUE(two->is_ok()) << two->to_string();
}

TEST(TcpCoordinator, ADrivenBarrierTimesOutNamingTheRankThatNeverArrived) {
  auto w = joined_world(3);
  const auto before = SteadyClock::now();
  ASSERT_TRUE(w[0]->start_barrier(milliseconds(200)).is_ok());
  ASSERT_TRUE(w[1]->start_barrier(milliseconds(5000)).is_ok());
  std::optional<Status> root = poll_until_ended(*w[0]);
  ASSERT_TRUE(root.has_value());
  EXPECT_LT(SteadyClock::now() - before, std::chrono::seconds(5));
  EXPECT_EQ(root->code(), StatusCode::kUnavailable) << root->to_string();
  EXPECT_NE(root->message().find("timed out waiting for rank 2 (127.0.0.1:"), std::string::npos)
      << root->to_string();
  EXPECT_NE(root->message().find("(during barrier)"), std::string::npos) << root->to_string();
  // Rank 0 gave up, told rank 1 why and closed its connections, so rank 1
  // learns it at once, not at its own 5 s deadline.
  std::optional<Status> member = poll_until_ended(*w[1]);
  ASSERT_TRUE(member.has_value());
  EXPECT_EQ(member->code(), StatusCode::kAborted) << member->to_string();
  EXPECT_NE(member->message().find("(rank 0 at 127.0.0.1:"), std::string::npos)
      << member->to_string();
  EXPECT_NE(member->message().find("gave up: coordinator: timed out waiting for rank 2"),
            std::string::npos)
      << member->to_string();
  EXPECT_LT(SteadyClock::now() - before, std::chrono::seconds(4));
  // Both coordinators are broken now and say why.
  EXPECT_EQ(w[0]->start_barrier(milliseconds(100)).code(), StatusCode::kAborted);
  EXPECT_EQ(w[1]->start_barrier(milliseconds(100)).code(), StatusCode::kAborted);
}

TEST(TcpCoordinator, ADrivenBarrierReadsAnArrivalThatComesInPieces) {
  auto root = make("127.0.0.1:0", 0, 2);
  ASSERT_NE(root, nullptr);
  Status joined;
  std::thread t([&] { joined = root->join(); });
  Socket member = raw_connect(root->port());
  raw_send(member, frame(FrameType::kHello, 1, encode_hello_body(2)));
  t.join();
  ASSERT_TRUE(joined.is_ok()) << joined.to_string();
  ASSERT_TRUE(root->start_barrier(milliseconds(5000)).is_ok());
  // Exchange 1's arrival (a gather of no bytes), cut after 5 header bytes
  // and again inside the body.
  const std::vector<std::byte> arrival = frame(FrameType::kGather, 1, encode_gather_body(1, ""));
  const std::span<const std::byte> bytes(arrival);
  raw_send(member, bytes.first(5));
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_FALSE(root->poll_barrier().has_value());
  raw_send(member, bytes.subspan(5, kFrameHeaderBytes + 1 - 5));
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_FALSE(root->poll_barrier().has_value());
  EXPECT_EQ(root->barrier_fds().size(), 1u);  // still waiting on rank 1's connection
  raw_send(member, bytes.subspan(kFrameHeaderBytes + 1));
  std::optional<Status> ended = poll_until_ended(*root);
  ASSERT_TRUE(ended.has_value());
  EXPECT_TRUE(ended->is_ok()) << ended->to_string();
  // Rank 0's answer: exchange 1, two empty entries.
  const Deadline deadline = SteadyClock::now() + milliseconds(5000);
  std::vector<std::byte> head(kFrameHeaderBytes);
  ASSERT_TRUE(recv_exact(member, head, deadline, "rank 0").is_ok());
  Result<FrameHeader> header = decode_frame_header(
      std::span<const std::byte, kFrameHeaderBytes>(head.data(), kFrameHeaderBytes), 1024);
  ASSERT_TRUE(header.is_ok()) << header.status().to_string();
  EXPECT_EQ(header->type, FrameType::kGatherResult);
  std::vector<std::byte> body(header->body_bytes);
  ASSERT_TRUE(recv_exact(member, body, deadline, "rank 0").is_ok());
  Result<std::vector<std::string>> entries = decode_gather_result_body(body, 1, 2);
  ASSERT_TRUE(entries.is_ok()) << entries.status().to_string();
  EXPECT_EQ(*entries, (std::vector<std::string>{"", ""}));
}

TEST(TcpCoordinator, AbortWhileABarrierIsPendingEndsItWithTheReason) {
  auto w = joined_world(2);
  ASSERT_TRUE(w[0]->start_barrier(milliseconds(5000)).is_ok());
  w[0]->abort(Status(StatusCode::kAborted, "rank 0's Recvs timed out"));
  EXPECT_FALSE(w[0]->barrier_pending());
  EXPECT_TRUE(w[0]->barrier_fds().empty());
  std::optional<Status> ended = w[0]->poll_barrier();
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(ended->code(), StatusCode::kAborted);
  EXPECT_NE(ended->message().find("rank 0's Recvs timed out"), std::string::npos)
      << ended->to_string();
  // Rank 1, arriving later, learns that rank 0 gave up, and why: its send
  // finds the connection closed (the abort waiting unread is still read), or
  // its wait for the answer reads the abort.
  std::this_thread::sleep_for(milliseconds(20));
  Status member = w[1]->start_barrier(milliseconds(5000));
  if (member.is_ok()) {
    std::optional<Status> ended1 = poll_until_ended(*w[1]);
    ASSERT_TRUE(ended1.has_value());
    member = *ended1;
  }
  EXPECT_EQ(member.code(), StatusCode::kAborted) << member.to_string();
  EXPECT_NE(member.message().find("gave up: rank 0's Recvs timed out"), std::string::npos)
      << member.to_string();
  EXPECT_FALSE(w[1]->barrier_pending());
}

TEST(TcpCoordinator, ABlockingBarrierRejectsARankThatSentBytesNamingIt) {
  auto w = joined_world(2);
  Result<std::vector<std::string>> member = Status(StatusCode::kInternal, "unset");
  std::thread t([&] { member = w[1]->all_gather("out of step"); });
  Status root = w[0]->barrier();
  t.join();
  EXPECT_EQ(root.code(), StatusCode::kMalformedMessage) << root.to_string();
  EXPECT_NE(root.message().find("rank 1 (127.0.0.1:"), std::string::npos) << root.to_string();
  EXPECT_NE(root.message().find("sent 11 bytes for a barrier"), std::string::npos)
      << root.to_string();
  EXPECT_FALSE(member.is_ok());  // no answer: rank 0 closed the connection
}

TEST(TcpCoordinator, ADrivenBarrierRejectsARankThatSentBytesNamingIt) {
  auto w = joined_world(2);
  ASSERT_TRUE(w[0]->start_barrier(milliseconds(5000)).is_ok());
  Result<std::vector<std::string>> member = Status(StatusCode::kInternal, "unset");
  std::thread t([&] { member = w[1]->all_gather("not empty"); });  // out of step
  std::optional<Status> root = poll_until_ended(*w[0]);
  t.join();
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->code(), StatusCode::kMalformedMessage) << root->to_string();
  EXPECT_NE(root->message().find("rank 1 (127.0.0.1:"), std::string::npos) << root->to_string();
  EXPECT_NE(root->message().find("sent 9 bytes for a barrier"), std::string::npos)
      << root->to_string();
  EXPECT_FALSE(member.is_ok());  // rank 0 closed the connection instead of answering
}

TEST(TcpCoordinator, WorldOfOneNeedsNobody) {
  auto root = make("127.0.0.1:0", 0, 1);
  ASSERT_NE(root, nullptr);
  ASSERT_TRUE(root->join().is_ok());
  Result<std::vector<std::string>> all = root->all_gather("me");
  ASSERT_TRUE(all.is_ok());
  EXPECT_EQ(*all, std::vector<std::string>{"me"});
  EXPECT_TRUE(root->barrier().is_ok());
  ASSERT_TRUE(root->start_barrier(milliseconds(100)).is_ok());
  std::optional<Status> alone = root->poll_barrier();
  ASSERT_TRUE(alone.has_value());
  EXPECT_TRUE(alone->is_ok()) << alone->to_string();
}

TEST(TcpCoordinator, RejectsAMalformedHelloNamingThePeer) {
  auto root = make("127.0.0.1:0", 0, 2);
  ASSERT_NE(root, nullptr);
  Status joined;
  std::thread t([&] { joined = root->join(); });
  Socket s = raw_connect(root->port());
  raw_send(s, text("GET / HTTP/1.0\r\n\r\n"));
  t.join();
  EXPECT_EQ(joined.code(), StatusCode::kMalformedMessage) << joined.to_string();
  EXPECT_NE(joined.message().find("coordinator: peer 127.0.0.1:"), std::string::npos)
      << joined.to_string();
  EXPECT_NE(joined.message().find("bad magic"), std::string::npos) << joined.to_string();
  // Broken for good: later calls say so instead of trying again.
  EXPECT_EQ(root->all_gather("x").status().code(), StatusCode::kAborted);
}

TEST(TcpCoordinator, RejectsAHugeBodyWithoutReadingIt) {
  auto root = make("127.0.0.1:0", 0, 2);
  ASSERT_NE(root, nullptr);
  Status joined;
  std::thread t([&] { joined = root->join(); });
  Socket s = raw_connect(root->port());
  raw_send(s, encode_frame_header({FrameType::kHello, 1, 1u << 30}));
  t.join();
  EXPECT_EQ(joined.code(), StatusCode::kMalformedMessage);
  EXPECT_NE(joined.message().find("more than the 4 allowed"), std::string::npos)
      << joined.to_string();
}

TEST(TcpCoordinator, RejectsAHelloFromARankOutsideTheWorld) {
  auto root = make("127.0.0.1:0", 0, 2);
  ASSERT_NE(root, nullptr);
  Status joined;
  std::thread t([&] { joined = root->join(); });
  Socket s = raw_connect(root->port());
  raw_send(s, frame(FrameType::kHello, 5, encode_hello_body(2)));
  t.join();
  EXPECT_EQ(joined.code(), StatusCode::kMalformedMessage);
  EXPECT_NE(joined.message().find("says it is rank 5, outside 1..1"), std::string::npos)
      << joined.to_string();
}

TEST(TcpCoordinator, RejectsAHelloWithAnotherWorldSize) {
  auto root = make("127.0.0.1:0", 0, 2);
  ASSERT_NE(root, nullptr);
  Status joined;
  std::thread t([&] { joined = root->join(); });
  Socket s = raw_connect(root->port());
  raw_send(s, frame(FrameType::kHello, 1, encode_hello_body(8)));
  t.join();
  EXPECT_EQ(joined.code(), StatusCode::kMalformedMessage);
  EXPECT_NE(joined.message().find("says the world has 8 ranks"), std::string::npos)
      << joined.to_string();
}

TEST(TcpCoordinator, RejectsTwoPeersClaimingTheSameRank) {
  auto root = make("127.0.0.1:0", 0, 3);
  ASSERT_NE(root, nullptr);
  Status joined;
  std::thread t([&] { joined = root->join(); });
  Socket a = raw_connect(root->port());
  raw_send(a, frame(FrameType::kHello, 1, encode_hello_body(3)));
  Socket b = raw_connect(root->port());
  raw_send(b, frame(FrameType::kHello, 1, encode_hello_body(3)));
  t.join();
  EXPECT_EQ(joined.code(), StatusCode::kMalformedMessage);
  EXPECT_NE(joined.message().find("which rank 1 (127.0.0.1:"), std::string::npos)
      << joined.to_string();
}

TEST(TcpCoordinator, PeerThatClosesMidMessageIsNamed) {
  auto root = make("127.0.0.1:0", 0, 2);
  ASSERT_NE(root, nullptr);
  Status joined;
  std::thread t([&] { joined = root->join(); });
  {
    Socket s = raw_connect(root->port());
    const auto head = encode_frame_header({FrameType::kHello, 1, 4});
    raw_send(s, std::span<const std::byte>(head).first(5));
  }  // closed here
  t.join();
  EXPECT_EQ(joined.code(), StatusCode::kPeerGone) << joined.to_string();
  EXPECT_NE(joined.message().find("closed the connection after 5 of 16 bytes"), std::string::npos)
      << joined.to_string();
}

TEST(TcpCoordinator, JoinTimesOutWhenARankNeverComes) {
  auto root = make("127.0.0.1:0", 0, 3, milliseconds(300));
  ASSERT_NE(root, nullptr);
  const auto before = SteadyClock::now();
  Status joined = root->join();
  EXPECT_LT(SteadyClock::now() - before, std::chrono::seconds(5));
  EXPECT_EQ(joined.code(), StatusCode::kUnavailable);
  EXPECT_NE(joined.message().find("timed out waiting for ranks to join the coordinator (0 of 2"),
            std::string::npos)
      << joined.to_string();
}

TEST(TcpCoordinator, SilentPeerTimesOutNamed) {
  auto root = make("127.0.0.1:0", 0, 2, milliseconds(300));
  ASSERT_NE(root, nullptr);
  Status joined;
  std::thread t([&] { joined = root->join(); });
  Socket s = raw_connect(root->port());  // connects, says nothing
  t.join();
  EXPECT_EQ(joined.code(), StatusCode::kUnavailable);
  EXPECT_NE(joined.message().find("timed out waiting for peer 127.0.0.1:"), std::string::npos)
      << joined.to_string();
}

TEST(TcpCoordinator, MemberTimesOutWhenNoCoordinatorListens) {
  // A port that was free a moment ago.
  uint16_t port = 0;
  {
    Result<Socket> probe = listen_tcp(Ipv4Endpoint{{htonl(INADDR_LOOPBACK)}, 0}, 1);
    ASSERT_TRUE(probe.is_ok());
    port = *local_port(*probe);
  }
  auto member = make("127.0.0.1:" + std::to_string(port), 1, 2, milliseconds(300));
  ASSERT_NE(member, nullptr);
  const auto before = SteadyClock::now();
  Status joined = member->join();
  EXPECT_LT(SteadyClock::now() - before, std::chrono::seconds(5));
  EXPECT_EQ(joined.code(), StatusCode::kUnavailable);
  EXPECT_NE(joined.message().find("timed out connecting to the coordinator (rank 0)"),
            std::string::npos)
      << joined.to_string();
}

// A fake rank 0 answers a member's gather with a result that lies.
void expect_member_rejects_result(const std::vector<std::byte>& result_frame,
                                  const std::string& want_in_message) {
  Result<Socket> listener = listen_tcp(Ipv4Endpoint{{htonl(INADDR_LOOPBACK)}, 0}, 1);
  ASSERT_TRUE(listener.is_ok());
  const uint16_t port = *local_port(*listener);
  std::thread fake_root([&] {
    const Deadline deadline = SteadyClock::now() + milliseconds(5000);
    Result<Socket> s = accept_before(*listener, deadline, nullptr, "member");
    ASSERT_TRUE(s.is_ok());
    std::vector<std::byte> hello(kFrameHeaderBytes + 4);
    ASSERT_TRUE(recv_exact(*s, hello, deadline, "member").is_ok());
    std::vector<std::byte> gather_head(kFrameHeaderBytes);
    ASSERT_TRUE(recv_exact(*s, gather_head, deadline, "member").is_ok());
    std::vector<std::byte> gather_body(4 + 2);  // sequence + "me"
    ASSERT_TRUE(recv_exact(*s, gather_body, deadline, "member").is_ok());
    ASSERT_TRUE(send_all(*s, result_frame, deadline, "member").is_ok());
    // Hold the connection until the member has judged the result.
    std::this_thread::sleep_for(milliseconds(200));
  });
  auto member = make("127.0.0.1:" + std::to_string(port), 1, 2);
  ASSERT_NE(member, nullptr);
  ASSERT_TRUE(member->join().is_ok());
  Result<std::vector<std::string>> all = member->all_gather("me");
  fake_root.join();
  ASSERT_FALSE(all.is_ok());
  EXPECT_EQ(all.status().code(), StatusCode::kMalformedMessage) << all.status().to_string();
  EXPECT_NE(all.status().message().find("the coordinator (rank 0 at 127.0.0.1:"), std::string::npos)
      << all.status().to_string();
  EXPECT_NE(all.status().message().find(want_in_message), std::string::npos)
      << all.status().to_string();
}

TEST(TcpCoordinator, MemberRejectsAResultWithTheWrongNumberOfEntries) {
  expect_member_rejects_result(
      frame(FrameType::kGatherResult, 0, encode_gather_result_body(1, {"a", "b", "c"})),
      "holding 3 entries, want 2");
}

TEST(TcpCoordinator, MemberRejectsAResultForAnotherExchange) {
  expect_member_rejects_result(
      frame(FrameType::kGatherResult, 0, encode_gather_result_body(7, {"a", "b"})),
      "for exchange 7, want exchange 1");
}

TEST(TcpCoordinator, MemberRejectsATruncatedEntry) {
  std::vector<std::byte> body = encode_gather_result_body(1, {"a", "bbbb"});
  // Entry 1 announces 4 bytes, 2 follow. (pop_back, not resize: GCC 12 with
  // the sanitizers warns falsely, -Wstringop-overflow, on a shrinking resize.)
  body.pop_back();
  body.pop_back();
  expect_member_rejects_result(frame(FrameType::kGatherResult, 0, body), "ends inside entry 1");
}

TEST(TcpCoordinator, MemberRejectsAMessageOfTheWrongType) {
  expect_member_rejects_result(frame(FrameType::kHello, 0, encode_hello_body(2)),
                               "sent a hello message where a gather result message belongs");
}

TEST(TcpCoordinator, AbortedRankFailsTheOthersAtOnce) {
  auto root = make("127.0.0.1:0", 0, 3, milliseconds(20'000));
  ASSERT_NE(root, nullptr);
  auto one = make(root_address(*root), 1, 3, milliseconds(20'000));
  auto two = make(root_address(*root), 2, 3, milliseconds(20'000));
  std::vector<Status> results(3);
  const auto before = SteadyClock::now();
  std::thread t0([&] {
    results[0] = root->join();
    if (results[0].is_ok()) results[0] = root->barrier();
  });
  std::thread t1([&] {
    results[1] = one->join();
    if (results[1].is_ok()) results[1] = one->barrier();
  });
  std::thread t2([&] {
    results[2] = two->join();
    two->abort(Status(StatusCode::kUnavailable, "rank 2: no RDMA device"));
  });
  t0.join();
  t1.join();
  t2.join();
  EXPECT_LT(SteadyClock::now() - before, std::chrono::seconds(5));
  // Rank 2 said why before it closed; rank 0 passed it on to rank 1.
  EXPECT_EQ(results[0].code(), StatusCode::kAborted) << results[0].to_string();
  EXPECT_NE(results[0].message().find("rank 2 (127.0.0.1:"), std::string::npos)
      << results[0].to_string();
  EXPECT_NE(results[0].message().find("gave up: rank 2: no RDMA device"), std::string::npos)
      << results[0].to_string();
  EXPECT_FALSE(results[1].is_ok());
  EXPECT_NE(results[1].message().find("rank 2: no RDMA device"), std::string::npos)
      << results[1].to_string();
  EXPECT_EQ(two->barrier().code(), StatusCode::kAborted);
}

// watch_peers polls until it reports something, at most `bound`.
Status watch_until_failed(TcpCoordinator& c, milliseconds bound) {
  const auto until = SteadyClock::now() + bound;
  Status st = c.watch_peers();
  while (st.is_ok() && SteadyClock::now() < until) {
    std::this_thread::sleep_for(milliseconds(1));
    st = c.watch_peers();
  }
  return st;
}

TEST(TcpCoordinator, WatchPeersSaysNothingWhileEveryRankIsThere) {
  auto w = joined_world(3);
  for (auto& c : w) EXPECT_TRUE(c->watch_peers().is_ok());
  // An early arrival at the next barrier is not a loss, and is still read by it.
  ASSERT_TRUE(w[1]->start_barrier(milliseconds(5000)).is_ok());
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_TRUE(w[0]->watch_peers().is_ok());
  ASSERT_TRUE(w[0]->start_barrier(milliseconds(5000)).is_ok());
  ASSERT_TRUE(w[2]->start_barrier(milliseconds(5000)).is_ok());
  for (auto& c : w) {
    std::optional<Status> ended = poll_until_ended(*c);
    ASSERT_TRUE(ended.has_value());
    EXPECT_TRUE(ended->is_ok()) << ended->to_string();
  }
}

TEST(TcpCoordinator, AMemberThatVanishesIsNamedLostByRankZeroAndTheOthersLearnIt) {
  auto w = joined_world(3);
  // Rank 1's process ends between exchanges: its socket closes, no abort.
  w[1].reset();
  const Status root = watch_until_failed(*w[0], milliseconds(5000));
  EXPECT_EQ(root.code(), StatusCode::kPeerGone) << root.to_string();
  EXPECT_EQ(root.message().find("rank 1 lost: rank 1 (127.0.0.1:"), 0u) << root.to_string();
  EXPECT_NE(root.message().find("without a word"), std::string::npos) << root.to_string();
  // Rank 0 passed it on: rank 2 learns which rank was lost, not "rank 0 lost".
  const Status two = watch_until_failed(*w[2], milliseconds(5000));
  EXPECT_EQ(two.code(), StatusCode::kAborted) << two.to_string();
  EXPECT_NE(two.message().find("gave up: rank 1 lost"), std::string::npos) << two.to_string();
  EXPECT_EQ(w[0]->start_barrier(milliseconds(100)).code(), StatusCode::kAborted);
}

TEST(TcpCoordinator, RankZeroThatVanishesIsNamedLostByTheOthers) {
  auto w = joined_world(2);
  w[0].reset();
  const Status one = watch_until_failed(*w[1], milliseconds(5000));
  EXPECT_EQ(one.code(), StatusCode::kPeerGone) << one.to_string();
  EXPECT_EQ(one.message().find("rank 0 lost: the coordinator (rank 0 at 127.0.0.1:"), 0u)
      << one.to_string();
}

TEST(TcpCoordinator, ARankLostDuringABarrierIsNamedLost) {
  auto w = joined_world(3);
  ASSERT_TRUE(w[0]->start_barrier(milliseconds(5000)).is_ok());
  ASSERT_TRUE(w[2]->start_barrier(milliseconds(5000)).is_ok());
  w[1].reset();
  std::optional<Status> root = poll_until_ended(*w[0]);
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->code(), StatusCode::kPeerGone) << root->to_string();
  EXPECT_EQ(root->message().find("rank 1 lost: "), 0u) << root->to_string();
  std::optional<Status> two = poll_until_ended(*w[2]);
  ASSERT_TRUE(two.has_value());
  EXPECT_NE(two->message().find("gave up: rank 1 lost: "), std::string::npos) << two->to_string();
}

TEST(TcpCoordinator, AnAbortReasonIsCutToItsBoundAndControlCharactersAreReplaced) {
  const std::vector<std::byte> body = encode_abort_body(std::string(5000, 'x'));
  EXPECT_EQ(body.size(), kMaxAbortReasonBytes);
  Result<std::string> why = decode_abort_body(text("line one\nline two\x1b[31m"));
  ASSERT_TRUE(why.is_ok());
  EXPECT_EQ(*why, "line one?line two?[31m");
  const auto head = encode_frame_header({FrameType::kAbort, 1, kMaxAbortReasonBytes + 1});
  EXPECT_EQ(decode_frame_header(head, 1u << 20).status().code(), StatusCode::kMalformedMessage);
  // An abort may always carry its reason, even where a 4-byte hello belongs.
  const auto fits = encode_frame_header({FrameType::kAbort, 1, kMaxAbortReasonBytes});
  EXPECT_TRUE(decode_frame_header(fits, 4).is_ok());
}

TEST(TcpCoordinator, RefusesBadOptions) {
  EXPECT_EQ(TcpCoordinator::create({"127.0.0.1:0", 2, 2}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(TcpCoordinator::create({"127.0.0.1:0", 0, 0}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(TcpCoordinator::create({"127.0.0.1", 0, 1}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(TcpCoordinator::create({"127.0.0.1:99999", 0, 1}).status().code(),
            StatusCode::kInvalidArgument);
  auto root = make("127.0.0.1:0", 0, 1);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->all_gather("x").status().code(), StatusCode::kInvalidArgument);  // before join
  ASSERT_TRUE(root->join().is_ok());
  EXPECT_EQ(root->all_gather(std::string(kMaxGatherEntryBytes + 1, 'x')).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tensorwire::launch
