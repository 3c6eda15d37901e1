"""The REST API at ``/api/``: the same services as the pages, no logic of its own.

This package holds the studies app's API (datasets, runs, correlations, studies…) and
the plumbing every app's API shares: authentication, errors, pagination, parsers,
permissions, filters, the schema's hooks and the serializers' base types. The other apps
own theirs (``annotation.api``, ``learned.api``); ``evalsite.api_urls`` mounts them all.

Views check permissions with the pages' rules (:mod:`studies.permissions`) and call the
services; serializers describe and validate, reusing the pages' forms where a page
already validates the same input.
"""
