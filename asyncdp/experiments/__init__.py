"""Running many scenarios: sweeps over a grid, regret of online runs, the demo.

* :mod:`.sweep`: Monte-Carlo parameter sweeps (in-process, processes, Dask);
  its parts: :mod:`.grid` (points, tasks, seeds), :mod:`.factories` (scenarios
  from a callable or a script), :mod:`.executors` (where tasks run),
  :mod:`.summaries` (metric columns, per-point means), :mod:`.results_io` (CSV/Parquet),
  :mod:`.checkpoint` (finished chunks on disk, resuming);
* :mod:`.regret`: regret curves from trajectories;
* :mod:`.noise_effect`: a run beside the same run without privacy noise (is the error the noise's?);
* :mod:`.demo`: the ``asyncdp demo`` job.
"""
