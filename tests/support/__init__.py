"""Test helpers shared by the suites (servers, fixtures' building blocks)."""
