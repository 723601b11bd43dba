"""The reward server as a Ray Serve deployment, for a cluster whose rollout workers outnumber
one server: `orchviz reward serve --ray --workers N` runs N replicas behind Ray's HTTP proxy,
each loading the model and serving the same application as uvicorn does
(`server.create_app`: the same routes, limits, token and sentences), reached in-process through
httpx's ASGI transport. `pip install 'ray[serve]'`."""

from __future__ import annotations

import time
from typing import Any

from viz_app.reward.server import ServeSettings


class RewardReplica:
    """One replica: the model and the application, built where the replica runs."""

    def __init__(self, settings: str):
        import httpx

        from viz_app.reward.scoring import load_scorer
        from viz_app.reward.server import create_app

        found = ServeSettings.from_env(settings)
        audit = None
        if found.audit:
            from viz_app.reward.audit import AuditLog

            audit = AuditLog(found.audit, every=found.audit_every)
        self.app = create_app(load_scorer(found.model, db=found.db, hf=found.hf), found, audit)
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app),
                                        base_url="http://reward", timeout=found.deadline + 5)

    async def __call__(self, request: Any):
        from starlette.responses import Response

        answer = await self.client.request(
            request.method, request.url.path, params=dict(request.query_params),
            content=await request.body(),
            headers={k: v for k, v in request.headers.items()
                     if k.lower() in ("authorization", "content-type", "content-length")})
        return Response(answer.content, status_code=answer.status_code,
                        media_type=answer.headers.get("content-type"))


def deployment(settings: ServeSettings, replicas: int = 1):
    """The bound Ray Serve application of `replicas` replicas."""
    try:
        from ray import serve
    except ImportError:
        from viz_app.reward.model import RewardError

        raise RewardError("--ray needs Ray Serve: pip install 'ray[serve]'") from None
    made = serve.deployment(RewardReplica, name="orchviz-reward", num_replicas=replicas)
    return made.bind(settings.to_env())


def run(settings: ServeSettings, host: str = "127.0.0.1", port: int = 8000,
        replicas: int = 1, block: bool = True) -> None:
    """Start Ray (or join the cluster RAY_ADDRESS names), deploy, and serve until stopped."""
    from viz_app.reward.scoring import load_scorer
    from viz_app.store import join_ray

    load_scorer(settings.model, db=settings.db, hf=settings.hf)  # a bad --model fails here
    join_ray("auto")  # RAY_ADDRESS's cluster, or a local one that ends with this process
    try:
        from ray import serve
    except ImportError:
        from viz_app.reward.model import RewardError

        raise RewardError("--ray needs Ray Serve: pip install 'ray[serve]'") from None
    serve.start(http_options={"host": host, "port": port})
    serve.run(deployment(settings, replicas), name="orchviz-reward", route_prefix="/")
    while block:
        time.sleep(3600)
