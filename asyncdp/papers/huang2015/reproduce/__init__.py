"""Reproductions of Huang, Mitra and Vaidya (ICDCN 2015): Fig. 1 and its parameter tuning."""
