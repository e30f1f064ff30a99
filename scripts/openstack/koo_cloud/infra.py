"""MariaDB and RabbitMQ: Debian's servers, run as the kit's own instances on 127.0.0.1."""

from __future__ import annotations

import shutil
import subprocess

from .kit import PASSWORD, Kit, KitError, port_open


def start_mariadb(kit: Kit, fresh: bool) -> None:
    data = kit.data("mariadb")
    socket_path = kit.tmp / "mariadb.sock"
    if fresh:
        shutil.rmtree(data)
        data.mkdir(parents=True)
        kit.run(
            "mariadb-install-db",
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={data}",
                "--user=root",
                "--skip-test-db",
                "--auth-root-authentication-method=socket",
            ],
        )
    kit.start(
        "mariadb",
        [
            "mariadbd",
            "--no-defaults",
            f"--datadir={data}",
            "--user=root",
            f"--socket={socket_path}",
            f"--port={kit.port('mariadb')}",
            "--bind-address=127.0.0.1",
            f"--pid-file={kit.tmp / 'mariadbd.pid'}",
            "--skip-name-resolve",
            "--skip-log-bin",
            # A test cloud's data need not survive a power cut: no fsync, small buffers.
            "--innodb-flush-log-at-trx-commit=0",
            "--innodb-doublewrite=0",
            "--innodb-flush-method=nosync",
            "--innodb-buffer-pool-size=128M",
            "--innodb-log-file-size=64M",
            "--max-connections=1000",
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_general_ci",
        ],
    )
    kit.wait_for("MariaDB", lambda: port_open(kit.port("mariadb")), 60, "mariadb")


def create_databases(kit: Kit, names: list[str]) -> None:
    statements = [f"CREATE USER IF NOT EXISTS 'koo'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}';"]
    for name in names:
        statements.append(f"CREATE DATABASE IF NOT EXISTS `{name}`;")
    statements.append("GRANT ALL PRIVILEGES ON *.* TO 'koo'@'127.0.0.1';")
    done = subprocess.run(
        ["mariadb", f"--socket={kit.tmp / 'mariadb.sock'}", "-uroot"],
        input="\n".join(statements),
        text=True,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise KitError(f"MariaDB refused the kit's databases: {done.stderr.strip()}")


def start_rabbitmq(kit: Kit) -> None:
    """RabbitMQ runs as root from its own directories (Debian's wrapper would switch to the rabbitmq
    user, which then must own them), with epmd started first on 127.0.0.1 so that `down` ends it too."""
    data = kit.data("rabbitmq")
    home = data / "home"
    home.mkdir(exist_ok=True)
    cookie = home / ".erlang.cookie"
    if not cookie.exists():
        cookie.write_text("KOOCLOUDCOOKIE")
        cookie.chmod(0o400)
    erl = {
        "HOME": str(home),
        "ERL_EPMD_ADDRESS": "127.0.0.1",
        "ERL_EPMD_PORT": str(kit.port("epmd")),
    }
    kit.start("epmd", ["epmd", "-address", "127.0.0.1", "-port", str(kit.port("epmd"))], erl)
    kit.wait_for("epmd", lambda: port_open(kit.port("epmd")), 30, "epmd")
    config = kit.etc("rabbitmq") / "rabbitmq.conf"
    config.write_text(
        "\n".join(
            [
                f"listeners.tcp.1 = 127.0.0.1:{kit.port('rabbitmq')}",
                # guest may log in over loopback only, which is all the kit uses.
                "loopback_users.guest = true",
                "disk_free_limit.absolute = 50MB",
                "vm_memory_high_watermark.relative = 0.2",
                "",
            ]
        )
    )
    (kit.etc("rabbitmq") / "enabled_plugins").write_text("[].\n")
    kit.start(
        "rabbitmq",
        ["/usr/lib/rabbitmq/bin/rabbitmq-server"],
        {
            **erl,
            "RABBITMQ_NODENAME": "koo-cloud@localhost",
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(kit.port("rabbitmq")),
            "RABBITMQ_DIST_PORT": str(kit.port("rabbitmq-dist")),
            "RABBITMQ_CONFIG_FILE": str(config.with_suffix("")),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(kit.etc("rabbitmq") / "enabled_plugins"),
            "RABBITMQ_MNESIA_BASE": str(data / "mnesia"),
            "RABBITMQ_LOG_BASE": str(kit.state / "log" / "rabbitmq.d"),
            "RABBITMQ_LOGS": "-",
            "RABBITMQ_PID_FILE": str(kit.tmp / "rabbitmq-beam.pid"),
            "RABBITMQ_SERVER_ERL_ARGS": "+S 1:1 +A 4",
        },
    )
    kit.wait_for("RabbitMQ", lambda: port_open(kit.port("rabbitmq")), 90, "rabbitmq")


def queue_consumers(kit: Kit, queue: str) -> int:
    """How many consumers a RabbitMQ queue has; 0 while nobody has declared it. A service's RPC
    server declares its queues when it starts consuming, and a cast to a topic no queue is bound
    to yet is dropped, so a warm start waits for this before it calls the cloud up."""
    import kombu  # oslo.messaging's own AMQP client, in the services' venv

    # oslo.messaging's scheme names its driver (rabbit), kombu's the protocol (amqp).
    url = "amqp://" + kit.transport_url.split("://", 1)[1]
    with kombu.Connection(url, connect_timeout=5) as connection:
        try:
            _, _, consumers = connection.default_channel.queue_declare(queue=queue, passive=True)
        except connection.channel_errors:
            return 0
    return consumers
