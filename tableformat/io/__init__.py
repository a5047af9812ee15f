"""Storage: the FileIO contract, its local, fsspec and S3 backends, the factory that picks one for a location,
and the parser of storage options given as text."""
