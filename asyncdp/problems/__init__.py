"""What the agents optimize: domains, cost functions and their classes, online losses, data sets.

* :mod:`.problem`: the problem ``min_{x in X} sum_i f_i(x)``;
* :mod:`.domains`: feasible sets with exact projections;
* :mod:`.costs`: cost families, the function class the accountant reads, user costs;
* :mod:`.online`: online losses (one per round); :mod:`.nonconvex`: nonconvex problems;
* :mod:`.datasets`: classification data; :mod:`.finite`: a fast finiteness test.
"""
