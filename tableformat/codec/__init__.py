"""The only (de)serialisation code: metadata JSON, Avro manifests, BinaryRow, Arrow schemas, journal bytes."""
