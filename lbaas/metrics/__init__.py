"""Prometheus metrics: this process's instruments, and collectors that read the database
at scrape time (issue 17). ``docs/operations.md`` lists every metric."""
