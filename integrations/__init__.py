"""Integrations: every change is an event that webhooks deliver reliably.

An integration configuration (the reference server's ``/api/admin/addons``, provider
``webhook``) says which events go where (``configs``). The webhook provider (``webhooks``)
defines its parameters and prepares each request (Standard Webhooks signatures, a Mustache
body template rendered by ``template``); ``sending`` makes one attempt with a hard deadline,
through the address guard (``address_guard``) that refuses non-public addresses. Delivery
(``delivery``) judges each attempt's outcome, retries with backoff and records every attempt
in the integration's event log, which spec 4.1 serves; the ``worker``'s threads claim due
deliveries and run it.
"""
