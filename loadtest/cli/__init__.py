"""The load test's command line, one module per family of commands: the runs against the
lab's cluster (`runs`), the bench (`bench`) and the calibration (`calibration`)."""
