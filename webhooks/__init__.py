"""The CMS webhook receiver: signed, validated changes into the queue (``create_app``).

``payload`` is the CMS contract, ``signature`` the Policy-Signature header,
``receiver`` the POST handler, ``app`` the ASGI app, ``serve`` runs it with uvicorn.
"""
