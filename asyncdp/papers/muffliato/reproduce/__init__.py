"""Reproductions of Cyffers, Even, Bellet and Massoulié (NeurIPS 2022)."""
