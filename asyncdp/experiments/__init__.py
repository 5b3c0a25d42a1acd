"""Running many scenarios: sweeps over a grid, regret of online runs, the demo.

* :mod:`.sweep`: Monte-Carlo parameter sweeps (in-process, processes, Dask);
* :mod:`.regret`: regret curves from trajectories;
* :mod:`.demo`: the ``asyncdp demo`` job.
"""
