"""The instance metadata service: OpenStack's and EC2's layouts, for signed requests only.

A metadata proxy (the agent on the instance's host) forwards an instance's request with
``X-Instance-ID``, its HMAC-SHA256 signature (``X-Instance-ID-Signature``) and
``X-Tenant-ID``. A missing or wrong signature is 403 (logged, without the headers'
values); a project that is not the instance's is 403 too, and an instance the registry
does not know is 404. Nothing here takes the caller's credentials: the signature is the
credential, as in Nova's metadata API.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import PlainTextResponse

from lbaas.api.routing import JsonRoute
from lbaas.api.services import ApiServices
from lbaas.errors import Forbidden, NotFound
from lbaas.metadata import signing
from lbaas.metadata.documents import Instance, ec2_meta_data, meta_data_json
from lbaas.network.instances import instance_of

log = logging.getLogger(__name__)
router = APIRouter(route_class=JsonRoute, tags=["metadata"], include_in_schema=False)


def _signed_instance(request: Request) -> Instance:
    secret: bytes = request.app.state.metadata_secret
    instance_id = request.headers.get(signing.INSTANCE_ID, "")
    signature = request.headers.get(signing.SIGNATURE, "")
    tenant = request.headers.get(signing.TENANT_ID, "")
    if not instance_id or not signature or not signing.verifies(secret, instance_id, signature):
        log.warning("metadata request refused: missing or wrong instance id signature")
        raise Forbidden("Invalid proxy request signature.")
    services: ApiServices = request.app.state.services
    with services.database.read() as session:
        instance = instance_of(session, instance_id)
    if instance is None:
        raise NotFound(f"Instance {instance_id} could not be found.")
    if tenant != instance.project_id:
        log.warning("metadata request refused: instance %s is not the project's", instance_id)
        raise Forbidden("Tenant ID does not match the instance's project.")
    return instance


@router.get("/openstack/latest/meta_data.json")
def openstack_meta_data(request: Request) -> dict[str, Any]:
    return meta_data_json(_signed_instance(request))


@router.get("/latest/meta-data/")
def ec2_index(request: Request) -> PlainTextResponse:
    keys = sorted(ec2_meta_data(_signed_instance(request)))
    return PlainTextResponse("\n".join(keys))


@router.get("/latest/meta-data/{key}")
def ec2_value(key: str, request: Request) -> PlainTextResponse:
    values = ec2_meta_data(_signed_instance(request))
    if key not in values:
        raise NotFound(f"Metadata key {key} could not be found.")
    return PlainTextResponse(values[key])
