#!/usr/bin/env python3
"""bench/verbs_vs_perftest_table.py reads perftest's client outputs as perftest 4.5 prints them.

The latency tests' header has a single space between "#bytes" and "#iterations" and two or
more between the other columns; the bandwidth tests' header has two or more everywhere. A
parser that splits only at two spaces reads every latency column one place off (t_typical
becomes t_max), which is what these cases guard against.
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import verbs_vs_perftest_table as table  # noqa: E402

LATENCY = (
    "---------------------------------------------------------------------------------------\n"
    " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
    "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n"
    " 8       1000          18.00          182.75       18.37    \t       21.63       \t12.86  "
    "\t\t95.42   \t\t182.75 \n"
    "---------------------------------------------------------------------------------------\n")
BANDWIDTH = (
    "---------------------------------------------------------------------------------------\n"
    " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
    " 1048576    64               48.02              46.08  \t\t   0.000046\n"
    "---------------------------------------------------------------------------------------\n")


class PerftestRow(unittest.TestCase):
    def row_of(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(" some preamble: GID, QPN, ...\n" + text)
        try:
            return table.perftest_row(f.name)
        finally:
            os.unlink(f.name)

    def test_latency_columns_line_up(self):
        row = self.row_of(LATENCY)
        self.assertEqual(row["#bytes"], "8")
        self.assertEqual(row["#iterations"], "1000")
        self.assertEqual(row["t_min[usec]"], "18.00")
        self.assertEqual(row["t_max[usec]"], "182.75")
        self.assertEqual(row["t_typical[usec]"], "18.37")
        self.assertEqual(row["99.9% percentile[usec]"], "182.75")

    def test_bandwidth_columns_line_up(self):
        row = self.row_of(BANDWIDTH)
        self.assertEqual(row["#bytes"], "1048576")
        self.assertEqual(row["#iterations"], "64")
        self.assertEqual(row["BW average[MB/sec]"], "46.08")

    def test_no_table_is_none(self):
        self.assertIsNone(self.row_of("ib_write_lat: couldn't connect\n"))


if __name__ == "__main__":
    unittest.main()
