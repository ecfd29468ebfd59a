"""The feature combinations rendered to ``tests/golden/haproxy/<name>.cfg``.

Each case is one graph, small enough that a reviewer can read its golden file and see the
feature it is about. Paths in the context point under ``RUN_DIR``, a placeholder the
validation test replaces with a real temporary directory before running ``haproxy -c``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from lbaas.model.enums import HealthMonitorType as HM
from lbaas.model.enums import HttpMethod
from lbaas.model.enums import L7CompareType as Compare
from lbaas.model.enums import L7PolicyAction as Action
from lbaas.model.enums import L7RuleType as Rule
from lbaas.model.enums import LbAlgorithm as Algo
from lbaas.model.enums import ListenerProtocol as LP
from lbaas.model.enums import PersistenceType as Sticky
from lbaas.model.enums import PoolProtocol as PP
from lbaas.model.graph import ListenerTimeouts, LoadBalancer, Member
from lbaas.render.haproxy.context import HaproxyContext, HaproxyPeer, HaproxyPeers
from tests.support.graphs import (
    VIP_ADDRESS,
    listener,
    load_balancer,
    member,
    monitor,
    persistence,
    policy,
    pool,
    rule,
)

RUN_DIR = "/run/lbaas-golden"
PING_SCRIPT = f"{RUN_DIR}/ping-member"
GOLDEN_CONTEXT = HaproxyContext(
    bind_address=VIP_ADDRESS,
    runtime_socket=f"{RUN_DIR}/haproxy.sock",
    state_dir=RUN_DIR,
    external_check_script=PING_SCRIPT,
)

PAIR_PEERS = HaproxyPeers(
    local_name="amp-a",
    members=(HaproxyPeer("amp-a", "10.9.0.11", 1025), HaproxyPeer("amp-b", "10.9.0.12", 1025)),
)
"""ACTIVE_STANDBY: this HAProxy is amp-a, and its stick tables are shared with amp-b."""

HOSTILE_VALUES = (
    "a value with spaces",
    "say \"hi\" and 'bye'",
    "C:\\dir\\file\\",
    "x # use_backend evil",
    "$HOME ${PATH} $",
    "%[src] 100%",
    "line1\nglobal\n    daemon",
    "-i",
)
"""Rule values a tenant could try to break out of an ACL with."""

HOSTILE_URL = "http://example.com/a b?q=\"x\"&r='y'#frag\\$HOME%20"
"""A redirect target with every character that means something to HAProxy's parser."""


@dataclass(frozen=True)
class GoldenCase:
    name: str
    build: Callable[[], LoadBalancer]
    ctx: HaproxyContext = GOLDEN_CONTEXT


def web_members(prefix: str) -> list[Member]:
    return [member(f"{prefix}-m1", "192.0.2.11"), member(f"{prefix}-m2", "192.0.2.12")]


def http_basic() -> LoadBalancer:
    return load_balancer(
        [listener("http", default_pool="web")],
        [pool("web", web_members("web"))],
    )


def tcp_leastconn_source_ip() -> LoadBalancer:
    return load_balancer(
        [listener("tcp", LP.TCP, 5432, default_pool="db")],
        [
            pool(
                "db",
                [member("db-m1", "10.0.1.5", 5432), member("db-m2", "10.0.1.6", 5432)],
                protocol=PP.TCP,
                algorithm=Algo.LEAST_CONNECTIONS,
                sticky=persistence(Sticky.SOURCE_IP),
                hm=monitor("db-hm", HM.TCP),
            )
        ],
    )


def https_passthrough() -> LoadBalancer:
    return load_balancer(
        [listener("https", LP.HTTPS, 443, default_pool="tls")],
        [
            pool(
                "tls",
                [member("tls-m1", "10.0.2.5", 8443), member("tls-m2", "10.0.2.6", 8443)],
                protocol=PP.HTTPS,
                algorithm=Algo.SOURCE_IP,
                hm=monitor("tls-hm", HM.TLS_HELLO),
            )
        ],
    )


def prometheus() -> LoadBalancer:
    return load_balancer(
        [
            listener("metrics", LP.PROMETHEUS, 9100, allowed_cidrs=["10.20.0.0/16"]),
            listener("http", default_pool="web"),
        ],
        [pool("web", web_members("web"))],
    )


def shared_pool() -> LoadBalancer:
    slow = ListenerTimeouts(client_data=90000, member_connect=2500, member_data=120000)
    return load_balancer(
        [
            listener("http-80", default_pool="shared"),
            listener("http-8080", port=8080, default_pool="shared", timeouts=slow),
            listener("tcp-9000", LP.TCP, 9000, default_pool="shared"),
        ],
        [pool("shared", web_members("shared"), hm=monitor("shared-hm", HM.HTTP))],
    )


def member_states() -> LoadBalancer:
    members = [
        member("ms-active", "192.0.2.21", weight=10),
        member("ms-drain", "192.0.2.22", weight=0),
        member("ms-backup", "192.0.2.23", backup=True),
        member("ms-down", "192.0.2.24", admin=False),
        member("ms-monitored", "192.0.2.25", monitor_address="198.51.100.25", monitor_port=9000),
        member("ms-ipv6", "2001:db8::25", monitor_address="2001:db8::99", monitor_port=9001),
        member("ms-heavy", "192.0.2.26", weight=256),
    ]
    return load_balancer(
        [listener("http", default_pool="states")],
        [pool("states", members, hm=monitor("states-hm", HM.TCP))],
    )


def http_cookie() -> LoadBalancer:
    return load_balancer(
        [listener("http", default_pool="web")],
        [pool("web", web_members("web"), sticky=persistence(Sticky.HTTP_COOKIE))],
    )


def app_cookie() -> LoadBalancer:
    return load_balancer(
        [
            listener("http", default_pool="app"),
            listener("tcp", LP.TCP, 8443, default_pool="tcp-app"),
        ],
        [
            pool("app", web_members("app"), sticky=persistence(Sticky.APP_COOKIE, "JSESSIONID")),
            pool(
                "tcp-app",
                web_members("tcp-app"),
                protocol=PP.TCP,
                sticky=persistence(Sticky.APP_COOKIE, "JSESSIONID"),
            ),
        ],
    )


def health_http() -> LoadBalancer:
    return load_balancer(
        [
            listener("http-80", default_pool="single"),
            listener("http-81", port=81, default_pool="list"),
            listener("http-82", port=82, default_pool="range"),
        ],
        [
            pool(
                "single",
                web_members("single"),
                hm=monitor(
                    "single-hm",
                    HM.HTTP,
                    method=HttpMethod.GET,
                    url_path="/healthz?full=1",
                    expected_codes="200",
                    http_version=1.1,
                    domain_name="app.example.com",
                ),
            ),
            pool(
                "list",
                web_members("list"),
                hm=monitor("list-hm", HM.HTTP, method=HttpMethod.HEAD, expected_codes="200, 202"),
            ),
            pool(
                "range",
                web_members("range"),
                hm=monitor(
                    "range-hm",
                    HM.HTTP,
                    delay=10,
                    timeout=0,
                    max_retries=5,
                    max_retries_down=1,
                    method=HttpMethod.POST,
                    url_path="/status",
                    expected_codes="200-204",
                    http_version=1.0,
                ),
            ),
        ],
    )


def health_https_and_tls() -> LoadBalancer:
    return load_balancer(
        [
            listener("https-443", LP.HTTPS, 443, default_pool="https"),
            listener("https-8443", LP.HTTPS, 8443, default_pool="hello"),
        ],
        [
            pool(
                "https",
                [member("https-m1", "10.0.3.5", 443)],
                protocol=PP.HTTPS,
                hm=monitor(
                    "https-hm",
                    HM.HTTPS,
                    url_path="/health",
                    expected_codes="200",
                    http_version=1.1,
                    domain_name="secure.example.com",
                ),
            ),
            pool(
                "hello",
                [member("hello-m1", "10.0.3.6", 443, monitor_port=8443)],
                protocol=PP.HTTPS,
                hm=monitor("hello-hm", HM.TLS_HELLO, delay=2, timeout=1),
            ),
        ],
    )


def health_ping() -> LoadBalancer:
    return load_balancer(
        [listener("tcp", LP.TCP, 22, default_pool="ssh")],
        [
            pool(
                "ssh",
                [member("ssh-m1", "10.0.4.5", 22), member("ssh-m2", "10.0.4.6", 22)],
                protocol=PP.TCP,
                hm=monitor("ssh-hm", HM.PING, delay=3, timeout=2),
            )
        ],
    )


def health_disabled() -> LoadBalancer:
    return load_balancer(
        [listener("http", default_pool="web")],
        [
            pool(
                "web",
                [member("web-m1", "192.0.2.11", monitor_address="198.51.100.11")],
                hm=monitor("web-hm", HM.HTTP, url_path="/healthz", admin=False),
            )
        ],
    )


def timeouts_and_limits() -> LoadBalancer:
    return load_balancer(
        [
            listener(
                "limited",
                default_pool="web",
                connection_limit=2000,
                timeouts=ListenerTimeouts(
                    client_data=30000, member_connect=1500, member_data=45000, tcp_inspect=3000
                ),
            ),
            listener(
                "unlimited",
                LP.TCP,
                9000,
                default_pool="tcp",
                connection_limit=0,
                timeouts=ListenerTimeouts(
                    client_data=0, member_connect=0, member_data=0, tcp_inspect=0
                ),
            ),
            listener("huge", LP.TCP, 9001, default_pool="tcp-2", connection_limit=80000),
        ],
        [
            pool("web", web_members("web")),
            pool("tcp", web_members("tcp"), protocol=PP.TCP),
            pool("tcp-2", web_members("tcp-2"), protocol=PP.TCP),
        ],
    )


def insert_headers() -> LoadBalancer:
    return load_balancer(
        [
            listener(
                "all-headers",
                default_pool="web",
                insert_headers={
                    "X-Forwarded-For": "true",
                    "x-forwarded-port": "TRUE",
                    "X-Forwarded-Proto": "True",
                    "X-Forwarded-IP": "true",
                    "X-Client-IP": "true",
                    "X-Real-IP": "true",
                },
            ),
            listener(
                "no-headers",
                port=81,
                default_pool="web",
                insert_headers={"X-Forwarded-For": "false", "X-Forwarded-Port": "False"},
            ),
        ],
        [pool("web", web_members("web"))],
    )


def allowed_cidrs() -> LoadBalancer:
    many = [f"10.{i}.0.0/16" for i in range(20)]
    return load_balancer(
        [
            listener(
                "http",
                default_pool="web",
                allowed_cidrs=["192.0.2.0/24", "198.51.100.7/32", "2001:db8::/32"],
            ),
            listener("tcp", LP.TCP, 9000, default_pool="tcp", allowed_cidrs=many),
        ],
        [pool("web", web_members("web")), pool("tcp", web_members("tcp"), protocol=PP.TCP)],
    )


def proxy_protocols() -> LoadBalancer:
    return load_balancer(
        [
            listener("http", default_pool="proxy-v1"),
            listener("tcp", LP.TCP, 9000, default_pool="proxy-v2"),
        ],
        [
            pool(
                "proxy-v1",
                web_members("proxy-v1"),
                protocol=PP.PROXY,
                hm=monitor("proxy-v1-hm", HM.HTTP),
            ),
            pool(
                "proxy-v2",
                [member("proxy-v2-m1", "10.0.5.5", 9000, monitor_port=9100)],
                protocol=PP.PROXYV2,
                hm=monitor("proxy-v2-hm", HM.TCP),
            ),
        ],
    )


def l7_rule_types() -> LoadBalancer:
    rules = [
        rule("host-eq", Rule.HOST_NAME, Compare.EQUAL_TO, "www.example.com"),
        rule("host-end", Rule.HOST_NAME, Compare.ENDS_WITH, ".example.com"),
        rule("path-beg", Rule.PATH, Compare.STARTS_WITH, "/api/"),
        rule("path-sub", Rule.PATH, Compare.CONTAINS, "/v2/"),
        rule("path-reg", Rule.PATH, Compare.REGEX, "^/items/[0-9]+$"),
        rule("file-eq", Rule.FILE_TYPE, Compare.EQUAL_TO, "jpg"),
        rule("file-reg", Rule.FILE_TYPE, Compare.REGEX, "\\.(png|gif)$"),
        rule("header-eq", Rule.HEADER, Compare.EQUAL_TO, '"beta tester"', key="X-Group"),
        rule("header-beg", Rule.HEADER, Compare.STARTS_WITH, "curl/", key="User-Agent"),
        rule("cookie-eq", Rule.COOKIE, Compare.EQUAL_TO, "on", key="canary", invert=True),
        rule("cert", Rule.SSL_CONN_HAS_CERT, Compare.EQUAL_TO, "True"),
        rule("verify", Rule.SSL_VERIFY_RESULT, Compare.EQUAL_TO, "0", invert=True),
        rule("dn-cn", Rule.SSL_DN_FIELD, Compare.ENDS_WITH, ".corp", key="CN"),
        rule("dn-ou", Rule.SSL_DN_FIELD, Compare.REGEX, "^eng-", key="OU"),
    ]
    policies = [
        policy(f"rule-types-{i}", Action.REDIRECT_TO_POOL, i, [r], redirect_pool="special")
        for i, r in enumerate(rules, start=1)
    ]
    return load_balancer(
        [listener("http", default_pool="web", policies=policies)],
        [pool("web", web_members("web")), pool("special", web_members("special"))],
    )


def l7_actions() -> LoadBalancer:
    api = rule("api", Rule.PATH, Compare.STARTS_WITH, "/api")
    policies = [
        policy(
            "to-api-pool",
            Action.REDIRECT_TO_POOL,
            1,
            [api, rule("api-v1", Rule.PATH, Compare.STARTS_WITH, "/api/v1", invert=True)],
            redirect_pool="api",
        ),
        policy(
            "to-new-site",
            Action.REDIRECT_TO_URL,
            2,
            [rule("old-host", Rule.HOST_NAME, Compare.EQUAL_TO, "old.example.com")],
            redirect_url="https://new.example.com/welcome",
            redirect_http_code=301,
        ),
        policy(
            "to-https",
            Action.REDIRECT_PREFIX,
            3,
            [rule("login", Rule.PATH, Compare.STARTS_WITH, "/login")],
            redirect_prefix="https://secure.example.com",
        ),
        policy(
            "block-admin",
            Action.REJECT,
            4,
            [
                rule("admin", Rule.PATH, Compare.STARTS_WITH, "/admin"),
                rule("admin-off", Rule.HEADER, Compare.EQUAL_TO, "1", key="X-Off", admin=False),
            ],
        ),
        policy(
            "disabled-policy",
            Action.REJECT,
            5,
            [rule("everything", Rule.PATH, Compare.STARTS_WITH, "/")],
            admin=False,
        ),
        policy(
            "all-rules-disabled",
            Action.REJECT,
            6,
            [rule("never", Rule.PATH, Compare.STARTS_WITH, "/", admin=False)],
        ),
        policy(
            "static-first",
            Action.REDIRECT_TO_POOL,
            0,
            [rule("static", Rule.PATH, Compare.STARTS_WITH, "/static")],
            redirect_pool="static",
        ),
    ]
    return load_balancer(
        [listener("http", default_pool="web", policies=policies)],
        [
            pool("web", web_members("web")),
            pool("api", web_members("api")),
            pool("static", web_members("static")),
        ],
    )


def l7_hostile_values() -> LoadBalancer:
    rules = [
        rule(f"hostile-{i}", Rule.HEADER, Compare.EQUAL_TO, value, key="X-Probe")
        for i, value in enumerate(HOSTILE_VALUES)
    ]
    policies = [policy(f"hostile-{i}", Action.REJECT, i, [r]) for i, r in enumerate(rules, start=1)]
    policies.append(
        policy(
            "hostile-redirect",
            Action.REDIRECT_TO_URL,
            len(policies) + 1,
            [rule("hostile-path", Rule.PATH, Compare.REGEX, "^/go\\$")],
            redirect_url=HOSTILE_URL,
        )
    )
    return load_balancer(
        [listener("http", default_pool="web", policies=policies)], [pool("web", web_members("web"))]
    )


def no_default_pool() -> LoadBalancer:
    return load_balancer(
        [
            listener(
                "http",
                policies=[
                    policy(
                        "only-api",
                        Action.REDIRECT_TO_POOL,
                        1,
                        [rule("only-api-path", Rule.PATH, Compare.STARTS_WITH, "/api")],
                        redirect_pool="api",
                    )
                ],
            ),
            listener("tcp", LP.TCP, 9000),
        ],
        [pool("api", web_members("api"))],
    )


def disabled_objects() -> LoadBalancer:
    return load_balancer(
        [
            listener("off", default_pool="web", admin=False),
            listener("on", port=81, default_pool="off-pool"),
        ],
        [pool("web", web_members("web")), pool("off-pool", web_members("off-pool"), admin=False)],
    )


def load_balancer_disabled() -> LoadBalancer:
    return load_balancer(
        [listener("http", default_pool="web"), listener("tcp", LP.TCP, 9000, default_pool="web")],
        [pool("web", web_members("web"))],
        admin=False,
    )


def empty_pool() -> LoadBalancer:
    return load_balancer(
        [listener("http", default_pool="empty"), listener("tcp", LP.TCP, 9000, default_pool="tcp")],
        [
            pool("empty", hm=monitor("empty-hm", HM.HTTP)),
            pool("tcp", protocol=PP.TCP, sticky=persistence(Sticky.SOURCE_IP)),
        ],
    )


def no_listeners() -> LoadBalancer:
    return load_balancer([], [pool("unused", web_members("unused"))])


def ipv6_vip() -> LoadBalancer:
    return load_balancer(
        [listener("http", default_pool="web", allowed_cidrs=["2001:db8:1::/48"])],
        [
            pool(
                "web",
                [member("v6-m1", "2001:db8::11"), member("v6-m2", "2001:db8::12")],
                sticky=persistence(Sticky.SOURCE_IP),
                algorithm=Algo.SOURCE_IP,
            )
        ],
        vip_address="::1",
    )


CASES: tuple[GoldenCase, ...] = (
    GoldenCase("http_basic", http_basic),
    GoldenCase("tcp_leastconn_source_ip", tcp_leastconn_source_ip),
    GoldenCase("https_passthrough", https_passthrough),
    GoldenCase("prometheus", prometheus),
    GoldenCase("shared_pool", shared_pool),
    GoldenCase("member_states", member_states),
    GoldenCase("http_cookie", http_cookie),
    GoldenCase("app_cookie", app_cookie),
    GoldenCase("health_http", health_http),
    GoldenCase("health_https_and_tls", health_https_and_tls),
    GoldenCase("health_ping", health_ping),
    GoldenCase("health_disabled", health_disabled),
    GoldenCase("timeouts_and_limits", timeouts_and_limits),
    GoldenCase("insert_headers", insert_headers),
    GoldenCase("allowed_cidrs", allowed_cidrs),
    GoldenCase("proxy_protocols", proxy_protocols),
    GoldenCase("l7_rule_types", l7_rule_types),
    GoldenCase("l7_actions", l7_actions),
    GoldenCase("l7_hostile_values", l7_hostile_values),
    GoldenCase("no_default_pool", no_default_pool),
    GoldenCase("disabled_objects", disabled_objects),
    GoldenCase("load_balancer_disabled", load_balancer_disabled),
    GoldenCase("empty_pool", empty_pool),
    GoldenCase("no_listeners", no_listeners),
    GoldenCase("ipv6_vip", ipv6_vip, replace(GOLDEN_CONTEXT, bind_address="::1")),
    GoldenCase(
        "user_group",
        http_basic,
        replace(GOLDEN_CONTEXT, user="haproxy", group="haproxy", maxconn_default=20000),
    ),
    GoldenCase(
        "pair_source_ip_peers", tcp_leastconn_source_ip, replace(GOLDEN_CONTEXT, peers=PAIR_PEERS)
    ),
    GoldenCase("pair_app_cookie_peers", app_cookie, replace(GOLDEN_CONTEXT, peers=PAIR_PEERS)),
    GoldenCase(
        "access_log",
        tcp_leastconn_source_ip,
        replace(GOLDEN_CONTEXT, access_log_socket=f"{RUN_DIR}-logs/amphora.sock"),
    ),
)
