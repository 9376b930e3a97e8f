"""The opie-market REST API (JSON over WSGI, OpenStack style).

:mod:`.app` builds the WSGI application and its paste factories,
:mod:`.policy` holds the oslo.policy rules (defaults in code).
"""
