"""The reconciler: ``plan`` (what is out of date, a pure function of fingerprints) and ``sync``."""
