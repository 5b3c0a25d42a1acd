"""Property checks of weight matrices and sequences (with witnesses) and the constants theorems derive."""
