"""The invariant fuzzer's machinery (issue 30): the model of the cloud an
owner and the system act on, the recorder of opie's destructive calls and
decisions, the brute-force oracle, and the rule-based state machine driven
by ``tests/functional/test_invariant_fuzz.py``.
"""
