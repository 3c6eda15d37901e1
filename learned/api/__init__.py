"""The learned app's REST API: training jobs and the trained metrics they give. Mounted
at ``/api/`` by ``evalsite.api_urls``; the shared plumbing (authentication, errors,
pagination, permissions, filters) is ``studies.api``'s."""
