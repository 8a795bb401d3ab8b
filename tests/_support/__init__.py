"""Helpers every test tier shares (unit, mock, broker, spark): import them as ``tests._support.<module>``.

Why a package of its own: tests/broker runs the scenarios of tests/mock against a real broker and
must check them the same way; a helper copied into each tier drifts. Nothing here is a test, and
nothing here may import from a tier's own directory.
"""
