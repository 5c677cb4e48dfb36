// SPDX-License-Identifier: MIT
//
// bench/peers/runtime_boost.cpp - the Boost.Fiber side of
// bench/peers/runtime_peers.c: the same three workloads with fibers and
// buffered channels.
//
//	runtime_boost version                      prints "boost.fiber 1.74" (BOOST_LIB_VERSION)
//	runtime_boost pingpong same-cpu|two-cpu LOOPS    ns per round trip
//	runtime_boost fib same-cpu|two-cpu N             ns per spawn
//	runtime_boost storm same-cpu|two-cpu GROUPS LOOPS  ns per message
//
// same-cpu: one thread, Boost's default round_robin scheduler. two-cpu: two
// threads, each pinned to one of the first two CPUs of the process's
// affinity (set by the driver); fib and storm share their fibers through
// algo::work_stealing (its default: idle threads poll, they do not sleep);
// pingpong runs one fiber per thread (each thread's own round_robin), the
// counterpart of two tasks pinned to two workers. Fibers get 64 KiB stacks
// (fixedsize_stack), the cachelocal runtime's default size. Each workload
// runs once as a warm-up (a tenth of the round trips or messages, the whole
// fib tree), then once measured; its
// result is checked (message values and counts, the fib value) and a wrong
// one exits 1. Output on success: one line "ns_per_op X".
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sched.h>

#include <boost/fiber/all.hpp>
#include <boost/fiber/algo/work_stealing.hpp>
#include <boost/version.hpp>

namespace fibers = boost::fibers;

namespace {

constexpr int kPairs = 20;       // senders and receivers per group (hackbench)
constexpr int kMsg = 100;        // message bytes
constexpr std::size_t kStormChan = 64; // buffered_channel(64) holds 63 messages
constexpr std::size_t kPingChan = 2;   // holds 1, as a capacity-1 channel
constexpr std::size_t kStack = 64 * 1024;

using Msg = std::array<unsigned char, kMsg>;
using Clock = std::chrono::steady_clock;

// Report and exit at once, from any fiber or thread (the other fibers may
// be blocked for good on the broken workload; no destructors run).
[[noreturn]] void fail(const std::string &why)
{
	std::fprintf(stderr, "runtime_boost: %s\n", why.c_str());
	std::fflush(stderr);
	std::_Exit(1);
}

double ns_since(Clock::time_point t0)
{
	return (double)std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

// The n-th CPU of the process's affinity at start.
int allowed_cpu(int n)
{
	static cpu_set_t set;
	static bool done;

	if (!done) {
		if (sched_getaffinity(0, sizeof(set), &set))
			fail("sched_getaffinity failed");
		done = true;
	}
	for (int c = 0, seen = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set) && seen++ == n)
			return c;
	fail("fewer CPUs allowed than the placement needs");
}

void pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		fail("pthread_setaffinity_np failed");
}

template <typename Fn> fibers::fiber spawn(Fn &&fn)
{
	return fibers::fiber(std::allocator_arg, fibers::fixedsize_stack(kStack), std::forward<Fn>(fn));
}

// ---------------------------------------------------------------- pingpong

void pp_serve(fibers::buffered_channel<long> &out, fibers::buffered_channel<long> &in, long loops)
{
	for (long i = 0; i < loops; i++) {
		long v = 2 * i;

		if (out.push(v) != fibers::channel_op_status::success ||
		    in.pop(v) != fibers::channel_op_status::success || v != 2 * i + 1)
			fail("pingpong: lost or wrong reply");
	}
}

void pp_answer(fibers::buffered_channel<long> &in, fibers::buffered_channel<long> &out, long loops)
{
	for (long i = 0; i < loops; i++) {
		long v;

		if (in.pop(v) != fibers::channel_op_status::success || v != 2 * i)
			fail("pingpong: lost or wrong message");
		if (out.push(v + 1) != fibers::channel_op_status::success)
			fail("pingpong: push failed");
	}
}

double pingpong(bool two, long loops)
{
	fibers::buffered_channel<long> ping(kPingChan), pong(kPingChan);
	double ns;

	if (!two) {
		fibers::fiber f = spawn([&] { pp_answer(ping, pong, loops); });
		auto t0 = Clock::now();

		pp_serve(ping, pong, loops);
		ns = ns_since(t0);
		f.join();
	} else {
		std::thread t([&] {
			pin_self(allowed_cpu(1));
			pp_answer(ping, pong, loops); // this thread's main fiber
		});
		auto t0 = Clock::now();

		pp_serve(ping, pong, loops);
		ns = ns_since(t0);
		t.join();
	}
	return ns / (double)loops;
}

// ---------------------------------------------------------------- fib

// fib(n) spawns fib(n-1) and fib(n-2) as fibers and joins both.
long fib_task(int n)
{
	long a = 0, b = 0;

	if (n < 2)
		return n;
	fibers::fiber fa = spawn([&a, n] { a = fib_task(n - 1); });
	fibers::fiber fb = spawn([&b, n] { b = fib_task(n - 2); });
	fa.join();
	fb.join();
	return a + b;
}

double fib(int n)
{
	long a = 0, b = 1, got = -1;

	for (int i = 0; i < n; i++) {
		long t = a + b;

		a = b;
		b = t;
	}
	long calls = 2 * b - 1; // the tree's nodes, the root's spawn included
	auto t0 = Clock::now();
	fibers::fiber root = spawn([&got, n] { got = fib_task(n); });

	root.join();
	double ns = ns_since(t0);

	if (got != a)
		fail("fib(" + std::to_string(n) + ") = " + std::to_string(got) + ", want " + std::to_string(a));
	return ns / (double)calls;
}

// ---------------------------------------------------------------- storm

double storm(int groups, long loops)
{
	int n = groups * 2 * kPairs;
	std::vector<std::unique_ptr<fibers::buffered_channel<Msg>>> rx;
	fibers::buffered_channel<char> gate(2);
	std::atomic<int> ready{ 0 };
	std::vector<fibers::fiber> fs;

	for (int i = 0; i < groups * kPairs; i++)
		rx.emplace_back(new fibers::buffered_channel<Msg>(kStormChan));
	for (int g = 0; g < groups; g++) {
		auto *grx = &rx[(size_t)g * kPairs];

		for (int idx = 0; idx < kPairs; idx++) {
			fs.push_back(spawn([&, grx, idx] { // sender
				Msg buf;
				char c;

				buf.fill((unsigned char)idx);
				ready.fetch_add(1);
				gate.pop(c); // closed: released
				for (long i = 0; i < loops; i++)
					for (int r = 0; r < kPairs; r++) {
						buf[1] = (unsigned char)i;
						if (grx[r]->push(buf) != fibers::channel_op_status::success)
							fail("storm: push failed");
					}
			}));
			fs.push_back(spawn([&, grx, idx] { // receiver: loops from each sender, in order
				long got[kPairs] = {};
				Msg m;
				char c;

				ready.fetch_add(1);
				gate.pop(c);
				for (long i = 0; i < loops * kPairs; i++) {
					if (grx[idx]->pop(m) != fibers::channel_op_status::success || m[0] >= kPairs ||
					    m[1] != (unsigned char)got[m[0]] || m[2] != m[0])
						fail("storm: lost, wrong or reordered message");
					got[m[0]]++;
				}
				for (int s = 0; s < kPairs; s++)
					if (got[s] != loops)
						fail("storm: message count of sender " + std::to_string(s));
			}));
		}
	}
	while (ready.load() < n)
		boost::this_fiber::yield();
	auto t0 = Clock::now();

	gate.close();
	for (auto &f : fs)
		f.join();
	double ns = ns_since(t0);

	return ns / ((double)groups * kPairs * kPairs * (double)loops);
}

long num(const char *s, long min)
{
	char *end;
	long v = std::strtol(s, &end, 10);

	if (*end || v < min)
		fail(std::string("bad number '") + s + "'");
	return v;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc == 2 && !std::strcmp(argv[1], "version")) {
		std::string v = BOOST_LIB_VERSION;

		for (auto &ch : v)
			if (ch == '_')
				ch = '.';
		std::printf("boost.fiber %s\n", v.c_str());
		return 0;
	}
	if (argc < 4 || (std::strcmp(argv[2], "same-cpu") && std::strcmp(argv[2], "two-cpu"))) {
		std::fprintf(stderr, "usage: runtime_boost version | pingpong|fib|storm same-cpu|two-cpu SIZE [LOOPS]\n");
		return 2;
	}
	std::string w = argv[1];
	bool two = !std::strcmp(argv[2], "two-cpu");
	double ns = 0;
	bool stop = false;
	fibers::mutex mtx;
	fibers::condition_variable cnd;
	std::thread helper;

	pin_self(allowed_cpu(0));
	if (two && w != "pingpong") {
		// the second thread joins the work-stealing pool and sleeps in a
		// fiber wait, so its scheduler runs stolen fibers until told to stop
		helper = std::thread([&] {
			pin_self(allowed_cpu(1));
			fibers::use_scheduling_algorithm<fibers::algo::work_stealing>(2);
			std::unique_lock<fibers::mutex> lk(mtx);
			cnd.wait(lk, [&] { return stop; });
		});
		fibers::use_scheduling_algorithm<fibers::algo::work_stealing>(2);
	}
	if (w == "pingpong") {
		long loops = num(argv[3], 1);

		pingpong(two, loops / 10 + 1);
		ns = pingpong(two, loops);
	} else if (w == "fib") {
		int n = (int)num(argv[3], 2);

		fib(n); // warm-up: the whole tree, so the heap holds its stacks
		ns = fib(n);
	} else if (w == "storm") {
		if (argc < 5)
			fail("storm needs GROUPS LOOPS");
		int groups = (int)num(argv[3], 1);
		long loops = num(argv[4], 1);

		storm(groups, loops / 10 + 1);
		ns = storm(groups, loops);
	} else {
		fail("unknown workload '" + w + "'");
	}
	if (helper.joinable()) {
		{
			std::unique_lock<fibers::mutex> lk(mtx);
			stop = true;
		}
		cnd.notify_all();
		helper.join();
	}
	std::printf("ns_per_op %.3f\n", ns);
	return 0;
}
