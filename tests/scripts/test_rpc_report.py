# SPDX-License-Identifier: MIT
"""The RPC section of scripts/bench_report.py (collect_rpc(), write_rpc_md())
and its check in scripts/check_report.py (check_rpc()), on synthetic lines
of bench/rpc/rpc. Run: python3 -m unittest discover -s tests/scripts"""
import copy
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import bench_report  # noqa: E402
import check_report  # noqa: E402


def max_line(server, reply, med):
    return {"kind": "rpc", "what": "max", "server": server, "server_desc": server + " server",
            "reply_bytes": reply, "unit": "req/s", "median": med, "min": med * 0.9,
            "max": med * 1.1, "runs": 5}


def lat_line(server, reply, load, p99):
    return {"kind": "rpc", "what": "latency", "server": server, "reply_bytes": reply,
            "load_pct": load, "rate": 1000.0 * load, "achieved": 1000.0 * load, "lost": 0,
            "unit": "us", "p50": p99 / 4, "p50_min": p99 / 5, "p50_max": p99 / 3, "p99": p99,
            "p99_min": p99 * 0.8, "p99_max": p99 * 1.2, "p999": p99 * 2, "p999_min": p99 * 1.5,
            "p999_max": p99 * 3, "runs": 5}


def lines(ours_max, go_max, epoll_max, ours_p99, go_p99, servers=("cachelocal", "go", "epoll")):
    maxes = {"cachelocal": ours_max, "go": go_max, "epoll": epoll_max}
    p99s = {"cachelocal": ours_p99, "go": go_p99, "epoll": 50.0}
    recs = []
    for s in servers:
        recs.append(max_line(s, 64, maxes[s]))
        recs += [lat_line(s, 64, load, p99s[s]) for load in bench_report.RPC_LEVELS]
    return recs


class CollectRpc(unittest.TestCase):
    def goal(self, rpc, gid):
        return next(g for g in rpc["goals"] if g["id"] == gid)

    def test_goals_judged_from_the_medians(self):
        rpc = bench_report.collect_rpc(lines(300e3, 150e3, 280e3, 40.0, 60.0))
        self.assertAlmostEqual(self.goal(rpc, "max-vs-go")["value"], 2.0)
        self.assertTrue(self.goal(rpc, "max-vs-go")["goal_met"])
        self.assertTrue(self.goal(rpc, "max-vs-epoll")["goal_met"])
        self.assertAlmostEqual(self.goal(rpc, "p99-75-vs-go")["value"], 1.5)
        self.assertTrue(self.goal(rpc, "p99-75-vs-go")["goal_met"])
        self.assertEqual(check_report.check_rpc(rpc), [])

    def test_goals_missed(self):
        rpc = bench_report.collect_rpc(lines(200e3, 150e3, 250e3, 80.0, 60.0))
        self.assertFalse(self.goal(rpc, "max-vs-go")["goal_met"])  # 1.33x < 1.5x
        self.assertFalse(self.goal(rpc, "max-vs-epoll")["goal_met"])
        self.assertFalse(self.goal(rpc, "p99-75-vs-go")["goal_met"])
        L = []
        bench_report.write_rpc_md(L, rpc)
        text = "\n".join(L)
        self.assertIn("the epoll loop is ahead by 25%", text)
        self.assertIn("**missed**", text)

    def test_a_saturated_load_generator_is_named_with_the_max_goals(self):
        recs = lines(200e3, 150e3, 250e3, 80.0, 60.0)
        busy = {"cachelocal": (0.97, 0.96), "go": (0.95, 0.99), "epoll": (0.90, 0.80)}
        for r in recs:
            if r["what"] == "max":
                r["server_cpu_busy"], r["client_cpu_busy"] = busy[r["server"]]
        rpc = bench_report.collect_rpc(recs)
        vs_go, vs_epoll = self.goal(rpc, "max-vs-go"), self.goal(rpc, "max-vs-epoll")
        self.assertTrue(vs_go["generator_bound"])  # 96% and 99%
        self.assertEqual(vs_go["generator_busy"], [0.96, 0.99])
        self.assertFalse(vs_epoll["generator_bound"])  # the epoll runs' generator: 80%
        self.assertFalse(vs_go["goal_met"])  # still judged on the medians
        self.assertNotIn("generator_bound", self.goal(rpc, "p99-75-vs-go"))
        self.assertEqual(check_report.check_rpc(rpc), [])
        L = []
        bench_report.write_rpc_md(L, rpc)
        text = "\n".join(L)
        go_line = next(x for x in L if "max throughput >= 1.5x" in x)
        self.assertIn("the load generator was 96% and 99% busy", go_line)
        epoll_line = next(x for x in L if "max throughput >= 1" in x and "1.5x" not in x)
        self.assertNotIn("load generator", epoll_line)
        self.assertIn("| 97% | 96% |", text)
        bad = copy.deepcopy(rpc)
        next(g for g in bad["goals"] if g["id"] == "max-vs-epoll")["generator_bound"] = True
        self.assertTrue(any("generator_bound" in e for e in check_report.check_rpc(bad)))

    def test_the_other_servers_kernel_time_bounds_what_no_user_work_could_reach(self):
        recs = lines(200e3, 150e3, 250e3, 80.0, 60.0)
        ticks = {"cachelocal": (40, 80), "go": (30, 90), "epoll": (20, 80)}
        for r in recs:
            if r["what"] == "max":
                r["server_user_ticks"], r["server_sys_ticks"] = ticks[r["server"]]
        rpc = bench_report.collect_rpc(recs)
        vs_go = self.goal(rpc, "max-vs-go")
        self.assertAlmostEqual(vs_go["other_kernel_share"], 0.75)
        self.assertAlmostEqual(vs_go["no_user_work_bound"], 4 / 3)
        self.assertAlmostEqual(self.goal(rpc, "max-vs-epoll")["no_user_work_bound"], 1.25)
        self.assertEqual(check_report.check_rpc(rpc), [])
        L = []
        bench_report.write_rpc_md(L, rpc)
        go_line = next(x for x in L if "max throughput >= 1.5x" in x)
        self.assertIn("go spent 75% of its server CPU time in the kernel", go_line)
        self.assertIn("at most 1.33x", go_line)
        self.assertIn("| 67% |", "\n".join(L))  # ours: 80 of 120 ticks
        bad = copy.deepcopy(rpc)
        self.goal(bad, "max-vs-go")["no_user_work_bound"] = 1.6
        self.assertTrue(any("no_user_work_bound" in e for e in check_report.check_rpc(bad)))

    def test_smoke_mode_judges_nothing(self):
        rpc = bench_report.collect_rpc(lines(300e3, 150e3, 280e3, 40.0, 60.0), judge=False)
        self.assertTrue(all(g["goal_met"] is None for g in rpc["goals"]))
        self.assertEqual(check_report.check_rpc(rpc), [])

    def test_without_the_cachelocal_server(self):
        recs = lines(0, 150e3, 280e3, 0, 60.0, servers=("go", "epoll"))
        recs.append({"kind": "rpc", "what": "skipped", "server": "cachelocal",
                     "reason": "runtime I/O not built"})
        rpc = bench_report.collect_rpc(recs)
        self.assertTrue(all(g["value"] is None and g["goal_met"] is None for g in rpc["goals"]))
        L = []
        bench_report.write_rpc_md(L, rpc)
        self.assertIn("cachelocal server: skipped (runtime I/O not built)", "\n".join(L))
        self.assertEqual(check_report.check_rpc(rpc), [])

    def test_not_run(self):
        self.assertIsNone(bench_report.collect_rpc([{"kind": "peer"}]))
        L = []
        bench_report.write_rpc_md(L, None)
        self.assertIn("Not run", "\n".join(L))
        self.assertEqual(check_report.check_rpc(None), [])


def costed(recs, cpu, calls):
    """@recs with each latency line's cost at 25-75% (cpu[server], calls[server]:
    us of CPU and system calls per request; user a quarter of the CPU)."""
    out = []
    for r in recs:
        r = dict(r)
        if r["what"] == "latency" and r["load_pct"] <= 75:
            c = cpu[r["server"]]
            r.update(cpu_us_per_req=c, user_us_per_req=c / 4, sys_us_per_req=c * 3 / 4,
                     syscalls_per_req=calls[r["server"]], requests_costed=5000.0)
        out.append(r)
    return out


class CostPerRequest(unittest.TestCase):
    def goal(self, rpc, gid):
        return next(g for g in rpc["goals"] if g["id"] == gid and g["reply_bytes"] == 64)

    def test_cost_goals_at_50_and_75_percent(self):
        recs = costed(lines(300e3, 150e3, 280e3, 40.0, 60.0),
                      {"cachelocal": 6.0, "go": 10.0, "epoll": 7.0},
                      {"cachelocal": 0.9, "go": 2.4, "epoll": 1.5})
        rpc = bench_report.collect_rpc(recs)
        for level in (50, 75):
            g = self.goal(rpc, "cpu-%d-vs-go" % level)
            self.assertAlmostEqual(g["value"], 10.0 / 6.0)
            self.assertTrue(g["goal_met"])  # 6 us <= 0.67 x 10 us
            self.assertEqual(g["goal"], "CPU per request at %d%% load <= 0.67x Go's" % level)
            self.assertTrue(self.goal(rpc, "cpu-%d-vs-epoll" % level)["goal_met"])
            g = self.goal(rpc, "calls-%d-vs-go" % level)
            self.assertAlmostEqual(g["value"], 2.4 / 0.9)
            self.assertTrue(g["goal_met"])
        self.assertFalse(any(g["id"].startswith(("cpu-25", "calls-25", "cpu-90")) for g in rpc["goals"]))
        self.assertEqual(check_report.check_rpc(rpc), [])
        L = []
        bench_report.write_rpc_md(L, rpc)
        text = "\n".join(L)
        self.assertIn("| 64 B | 50% | cachelocal | 6.00 | 1.50 | 4.50 | 0.90 | 5000 |", text)
        self.assertIn("- 64 B reply, CPU per request at 75% load <= 0.67x Go's: met (1.67x; "
                      "goal >= 1.50x)", text)

    def test_cost_goals_missed_and_not_counted(self):
        recs = costed(lines(300e3, 150e3, 280e3, 40.0, 60.0),
                      {"cachelocal": 8.0, "go": 10.0, "epoll": 7.0},
                      {"cachelocal": 1.5, "go": 2.4, "epoll": None})
        rpc = bench_report.collect_rpc(recs)
        self.assertFalse(self.goal(rpc, "cpu-50-vs-go")["goal_met"])     # 8 > 0.67 x 10
        self.assertFalse(self.goal(rpc, "cpu-75-vs-epoll")["goal_met"])  # 8 > 7
        self.assertFalse(self.goal(rpc, "calls-50-vs-go")["goal_met"])   # 1.5 > 2.4 / 2
        self.assertEqual(check_report.check_rpc(rpc), [])
        L = []
        bench_report.write_rpc_md(L, rpc)
        self.assertIn("| epoll | 7.00 | 1.75 | 5.25 | not counted |", "\n".join(L))

    def test_without_cost_lines_the_goals_are_not_judged(self):
        rpc = bench_report.collect_rpc(lines(300e3, 150e3, 280e3, 40.0, 60.0))
        g = self.goal(rpc, "cpu-50-vs-go")
        self.assertIsNone(g["value"])
        self.assertIsNone(g["goal_met"])

    def test_the_check_catches_parts_that_do_not_add_up(self):
        recs = costed(lines(300e3, 150e3, 280e3, 40.0, 60.0),
                      {"cachelocal": 6.0, "go": 10.0, "epoll": 7.0},
                      {"cachelocal": 0.9, "go": 2.4, "epoll": 1.5})
        rpc = bench_report.collect_rpc(recs)
        rpc["latency"][1]["user_us_per_req"] += 1.0
        self.assertTrue(any("user + system" in e for e in check_report.check_rpc(rpc)))
        rpc = bench_report.collect_rpc(recs)
        rpc["latency"][1]["syscalls_per_req"] = -1
        self.assertTrue(any("system calls per request" in e for e in check_report.check_rpc(rpc)))


class CheckRpc(unittest.TestCase):
    def setUp(self):
        self.rpc = bench_report.collect_rpc(lines(300e3, 150e3, 280e3, 40.0, 60.0))

    def test_a_false_goal_met_is_caught(self):
        bad = copy.deepcopy(self.rpc)
        bad["goals"][0]["goal_met"] = not bad["goals"][0]["goal_met"]
        self.assertTrue(any("goal_met" in e for e in check_report.check_rpc(bad)))

    def test_a_missing_load_level_is_caught(self):
        bad = copy.deepcopy(self.rpc)
        bad["latency"] = [x for x in bad["latency"]
                          if not (x["server"] == "go" and x["load_pct"] == 90)]
        self.assertTrue(any("load levels" in e for e in check_report.check_rpc(bad)))

    def test_percentiles_out_of_order_are_caught(self):
        bad = copy.deepcopy(self.rpc)
        bad["latency"][0]["p50"] = bad["latency"][0]["p99"] * 2
        bad["latency"][0]["p50_max"] = bad["latency"][0]["p50"]
        self.assertTrue(any("p50 <= p99" in e for e in check_report.check_rpc(bad)))

    def test_a_wrong_value_is_caught(self):
        bad = copy.deepcopy(self.rpc)
        bad["goals"][1]["value"] *= 2
        self.assertTrue(any("value" in e for e in check_report.check_rpc(bad)))


class PeerGoals(unittest.TestCase):
    def test_runtime_rpc_peer_goals(self):
        text, need = bench_report.peer_goal({"structure": "runtime-rpc", "peer": "go1.19.8 (x)",
                                             "workload": "max throughput, 64 B reply"})
        self.assertEqual(need, 1.5)
        text, need = bench_report.peer_goal({"structure": "runtime-rpc", "peer": "epoll loop (C)",
                                             "workload": "max throughput, 4096 B reply"})
        self.assertEqual(need, 1.0)
        text, need = bench_report.peer_goal({"structure": "runtime-rpc", "peer": "go1.19.8",
                                             "workload": "p99 at 75% load, 64 B reply"})
        self.assertEqual(need, 1.0)
        text, need = bench_report.peer_goal({"structure": "runtime-rpc", "peer": "epoll loop",
                                             "workload": "p99 at 75% load, 64 B reply"})
        self.assertIsNone(need)


if __name__ == "__main__":
    unittest.main()
