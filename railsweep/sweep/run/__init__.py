"""The sweep running on Ray: the driver (:func:`~railsweep.sweep.run.driver.run_sweep`), the waves of engine
actors and Tune trials, the steps after the trials, the progress line and the tests' fault hook."""
