"""Locust side of bench/live.bench.ts: GET one emulator route at a constant rate per user.

The CPU seconds of the load window (test_start -> test_stop, this process only) and Locust's own
request counts are written as JSON to $BENCH_OUT, so the bench compares requests per CPU-second
of the two generators over the same window definition.
"""
import json
import os
import resource
import time

from locust import HttpUser, constant_throughput, events, task

PATH = os.environ["BENCH_PATH"]
TOKEN = os.environ["BENCH_TOKEN"]
RATE_PER_USER = float(os.environ.get("BENCH_RATE_PER_USER", "10"))
marks = {}


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@events.test_start.add_listener
def on_test_start(environment, **_kwargs):
    marks["cpu"] = cpu_seconds()
    marks["wall"] = time.monotonic()


@events.test_stop.add_listener
def on_test_stop(environment, **_kwargs):
    total = environment.stats.total
    with open(os.environ["BENCH_OUT"], "w") as out:
        json.dump(
            {
                "cpuS": cpu_seconds() - marks["cpu"],
                "wallS": time.monotonic() - marks["wall"],
                "requests": total.num_requests,
                "failures": total.num_failures,
                "p50": total.get_response_time_percentile(0.5),
                "p99": total.get_response_time_percentile(0.99),
            },
            out,
        )


class Bench(HttpUser):
    wait_time = constant_throughput(RATE_PER_USER)

    @task
    def get_issue(self):
        self.client.get(PATH, headers={"authorization": f"token {TOKEN}"}, name="issue")
