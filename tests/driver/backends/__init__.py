"""Tests of the driver's backends."""
