"""The two engines and what they share: timing, links, transcripts.

* :mod:`.simpy_engine`: the event-driven reference engine (any timing);
* :mod:`.batch_engine`: ``R`` lockstep runs at once, as arrays;
* :mod:`.timing`, :mod:`.links`: when agents send and combine, and what a link does to a message;
* :mod:`.transcript`: the eavesdropper's view of a run; :mod:`.transcript_io`: its files and table form.
"""
