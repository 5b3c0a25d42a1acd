"""The two engines and what they share: timing, links, transcripts.

* :mod:`.simpy_engine`: the event-driven reference engine (any timing);
* :mod:`.batch_engine`: ``R`` runs at once, as arrays (any timing: lockstep there; deadline and async timing
  in :mod:`.batch_deadline`, on the plan of ``.batch_plan``, the draws of :mod:`.batch_draws`, the clocks of
  ``.batch_clocks`` and the schedules of ``.batch_schedule``; each run rebuilt in :mod:`.batch_detail`;
  combines in dependency order in :mod:`.batch_levels`);
* :mod:`.schedule`: the realized schedule of a run, and of many runs as columns;
* :mod:`.timing`, :mod:`.links`: when agents send and combine, and what a link does to a message;
* :mod:`.transcript`: the eavesdropper's view of a run; :mod:`.transcript_io`: its files and table form.
"""
