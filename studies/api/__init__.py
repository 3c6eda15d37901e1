"""The REST API at ``/api/``: the same services as the pages, no logic of its own.

Views check permissions with the pages' rules (:mod:`studies.permissions`, the campaign
services' querysets) and call the services; serializers describe and validate, reusing
the pages' forms where a page already validates the same input.
"""
