"""The write path: Parquet data files, manifest merging and the committer that creates every snapshot."""
