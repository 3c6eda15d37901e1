"""The annotation app's REST API: campaigns for researchers, the annotation queue for
annotators. Mounted at ``/api/`` by ``evalsite.api_urls``; the shared plumbing
(authentication, errors, pagination, permissions, filters) is ``studies.api``'s."""
