"""examples/kv_server.c driven from clients: every reply over many
connections, the idle timeout, the drain on SIGTERM with connections open,
the exit code, and its length (at most 120 lines that are neither blank nor
comment). KV_SERVER names the built binary (make check-kv-server sets it);
without it the tests that run it are skipped."""
import os
import re
import signal
import socket
import subprocess
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "..", "examples", "kv_server.c")
BIN = os.environ.get("KV_SERVER")


def code_lines(path):
    with open(path) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    return [l for l in text.splitlines() if l.strip() and not l.strip().startswith("//")]


class Server:
    def __init__(self):
        self.p = subprocess.Popen([BIN, "0"], stdout=subprocess.PIPE, text=True)
        first = self.p.stdout.readline()
        m = re.fullmatch(r"listening on 127\.0\.0\.1:(\d+)\n", first)
        if not m:
            self.p.kill()
            raise AssertionError("first line: %r" % first)
        self.port = int(m.group(1))
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.append(line.rstrip("\n"))

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=20)
        return s, s.makefile("rwb")

    def stop(self, sig=signal.SIGTERM, timeout=20):
        self.p.send_signal(sig)
        rc = self.p.wait(timeout)
        self.reader.join(5)
        self.p.stdout.close()
        return rc


def ask(f, line):
    f.write(line.encode() + b"\n")
    f.flush()
    return f.readline().decode()


@unittest.skipUnless(BIN, "KV_SERVER not set (make check-kv-server runs these)")
class KvServer(unittest.TestCase):
    def test_replies_over_many_connections_and_the_total(self):
        srv = Server()
        conns, errors, sent = 40, [], [0]
        lock = threading.Lock()

        def client(i):
            try:
                s, f = srv.connect()
                n = 0
                for k in range(25):
                    key, val = "k%d_%d" % (i, k), "v %d %d" % (i, k)
                    self.assertEqual(ask(f, "GET " + key), "NOTFOUND\n")
                    self.assertEqual(ask(f, "SET %s %s" % (key, val)), "OK\n")
                    self.assertEqual(ask(f, "GET " + key), val + "\n")
                    n += 3
                for bad in ("FOO", "GET", "SET onlykey", "GET a b", ""):
                    self.assertEqual(ask(f, bad), "ERR\n", bad)
                    n += 1
                f.close()
                s.close()
                with lock:
                    sent[0] += n
            except Exception as e:  # reported below, on the main thread
                errors.append(e)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(conns)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        want = "requests: %d" % sent[0]
        end = time.monotonic() + 10
        while want not in srv.lines and time.monotonic() < end:
            time.sleep(0.1)  # the stats task prints every second
        self.assertIn(want, srv.lines)
        self.assertEqual(srv.stop(), 0)
        self.assertIn("total requests: %d" % sent[0], srv.lines)
        stats = [int(l.split()[1]) for l in srv.lines if l.startswith("requests: ")]
        self.assertTrue(stats, srv.lines)
        self.assertEqual(stats, sorted(stats))

    def test_an_idle_connection_gets_timeout_and_is_closed(self):
        srv = Server()
        s, f = srv.connect()
        self.assertEqual(ask(f, "SET a 1"), "OK\n")
        t = time.monotonic()
        self.assertEqual(f.readline(), b"TIMEOUT\n")
        idle = time.monotonic() - t
        self.assertEqual(f.readline(), b"", "closed after TIMEOUT")
        self.assertGreaterEqual(idle, 4.9, "TIMEOUT before 5 s idle")
        f.close()
        s.close()
        self.assertEqual(srv.stop(), 0)

    def test_sigterm_drains_open_connections_then_exits_0(self):
        srv = Server()
        s, f = srv.connect()
        self.assertEqual(ask(f, "SET a 1"), "OK\n")
        idle, fi = srv.connect()  # stays silent: ended by the drain's end
        srv.p.send_signal(signal.SIGTERM)
        # served during the drain
        self.assertEqual(ask(f, "GET a"), "1\n")
        s.close()
        with self.assertRaises(OSError):
            for _ in range(50):  # no new connection once accepting stopped
                c = socket.create_connection(("127.0.0.1", srv.port), timeout=1)
                c.close()
                time.sleep(0.05)
        self.assertEqual(fi.readline(), b"", "the idle connection is closed, no TIMEOUT")
        fi.close()
        idle.close()
        f.close()
        self.assertEqual(srv.p.wait(20), 0)
        srv.reader.join(5)
        srv.p.stdout.close()
        self.assertIn("total requests: 2", srv.lines)

    def test_sigint_stops_it_too(self):
        srv = Server()
        self.assertEqual(srv.stop(signal.SIGINT), 0)


class KvServerSource(unittest.TestCase):
    def test_at_most_120_lines_of_code(self):
        n = len(code_lines(SRC))
        self.assertLessEqual(n, 120, "examples/kv_server.c has %d lines of code" % n)


if __name__ == "__main__":
    unittest.main()
