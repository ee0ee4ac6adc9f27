//! Every refusal of the untrusted Compose policy, and that a trusted
//! Playroom accepts the same file.

use play_model::compose::{Policy, validate_compose};

/// (what, compose YAML, refused path, message fragment)
const REFUSALS: &[(&str, &str, &str, &str)] = &[
    ("privileged", "services:\n  web:\n    image: x\n    privileged: true\n", "services.web.privileged", "privileged"),
    (
        "privileged as string",
        "services:\n  web:\n    image: x\n    privileged: \"true\"\n",
        "services.web.privileged",
        "privileged",
    ),
    (
        "relative bind mount no mounted file provides",
        "services:\n  web:\n    image: x\n    volumes: [\"./src:/app\"]\n",
        "services.web.volumes[0]",
        "add_mounted_file with path `src`",
    ),
    (
        "bind mount climbing out of the project",
        "services:\n  web:\n    image: x\n    volumes: [\"../../etc/passwd:/x\"]\n",
        "services.web.volumes[0]",
        "`..` segment",
    ),
    (
        "absolute bind mount",
        "services:\n  web:\n    image: x\n    volumes: [\"/etc:/host-etc:ro\"]\n",
        "services.web.volumes[0]",
        "bind-mounting",
    ),
    (
        "home bind mount",
        "services:\n  web:\n    image: x\n    volumes: [\"~/.ssh:/root/.ssh\"]\n",
        "services.web.volumes[0]",
        "bind-mounting",
    ),
    (
        "long bind mount",
        "services:\n  web:\n    image: x\n    volumes:\n      - type: bind\n        source: /srv\n        target: /srv\n",
        "services.web.volumes[0]",
        "bind-mounting",
    ),
    (
        "docker socket",
        "services:\n  web:\n    image: x\n    volumes: [\"/var/run/docker.sock:/var/run/docker.sock\"]\n",
        "services.web.volumes[0]",
        "Docker socket",
    ),
    (
        "docker socket long",
        "services:\n  web:\n    image: x\n    volumes:\n      - {type: bind, source: /run/docker.sock, target: /d.sock}\n",
        "services.web.volumes[0]",
        "Docker socket",
    ),
    (
        "npipe",
        "services:\n  web:\n    image: x\n    volumes:\n      - {type: npipe, source: '\\\\.\\pipe\\docker_engine', target: /p}\n",
        "services.web.volumes[0]",
        "named pipe",
    ),
    (
        "use_api_socket",
        "services:\n  web:\n    image: x\n    use_api_socket: true\n",
        "services.web.use_api_socket",
        "Docker API",
    ),
    (
        "network_mode host",
        "services:\n  web:\n    image: x\n    network_mode: host\n",
        "services.web.network_mode",
        "host",
    ),
    (
        "network_mode container",
        "services:\n  web:\n    image: x\n    network_mode: \"container:other\"\n",
        "services.web.network_mode",
        "container:other",
    ),
    ("pid host", "services:\n  web:\n    image: x\n    pid: host\n", "services.web.pid", "host"),
    ("ipc host", "services:\n  web:\n    image: x\n    ipc: host\n", "services.web.ipc", "host"),
    ("uts host", "services:\n  web:\n    image: x\n    uts: host\n", "services.web.uts", "host"),
    ("userns host", "services:\n  web:\n    image: x\n    userns_mode: host\n", "services.web.userns_mode", "host"),
    ("cgroup host", "services:\n  web:\n    image: x\n    cgroup: host\n", "services.web.cgroup", "host"),
    (
        "volumes_from container",
        "services:\n  web:\n    image: x\n    volumes_from: [\"container:db1\"]\n",
        "services.web.volumes_from[0]",
        "outside the project",
    ),
    (
        "devices",
        "services:\n  web:\n    image: x\n    devices: [\"/dev/kvm:/dev/kvm\"]\n",
        "services.web.devices",
        "devices",
    ),
    ("gpus", "services:\n  web:\n    image: x\n    gpus: all\n", "services.web.gpus", "GPU"),
    (
        "device reservations",
        "services:\n  web:\n    image: x\n    deploy:\n      resources:\n        reservations:\n          devices:\n            - {driver: nvidia, count: 1, capabilities: [gpu]}\n",
        "services.web.deploy.resources.reservations.devices",
        "devices",
    ),
    (
        "cap_add SYS_ADMIN",
        "services:\n  web:\n    image: x\n    cap_add: [NET_BIND_SERVICE, SYS_ADMIN]\n",
        "services.web.cap_add[1]",
        "SYS_ADMIN",
    ),
    ("cap_add ALL", "services:\n  web:\n    image: x\n    cap_add: [ALL]\n", "services.web.cap_add[0]", "ALL"),
    (
        "cap_add CAP_ prefix",
        "services:\n  web:\n    image: x\n    cap_add: [CAP_NET_ADMIN]\n",
        "services.web.cap_add[0]",
        "NET_ADMIN",
    ),
    (
        "seccomp unconfined",
        "services:\n  web:\n    image: x\n    security_opt: [\"seccomp:unconfined\"]\n",
        "services.web.security_opt[0]",
        "confinement",
    ),
    (
        "apparmor unconfined",
        "services:\n  web:\n    image: x\n    security_opt: [\"apparmor=unconfined\"]\n",
        "services.web.security_opt[0]",
        "confinement",
    ),
    (
        "label disable",
        "services:\n  web:\n    image: x\n    security_opt: [\"label:disable\"]\n",
        "services.web.security_opt[0]",
        "confinement",
    ),
    (
        "volume driver_opts bind",
        "services:\n  web:\n    image: x\n    volumes: [\"data:/data\"]\nvolumes:\n  data:\n    driver: local\n    driver_opts: {type: none, o: bind, device: /srv/data}\n",
        "volumes.data.driver_opts",
        "bind",
    ),
    (
        "volume driver_opts device",
        "services:\n  web:\n    image: x\n    volumes: [\"data:/data\"]\nvolumes:\n  data:\n    driver_opts: {type: ext4, device: /dev/sda1}\n",
        "volumes.data.driver_opts",
        "device",
    ),
    (
        "inline seccomp profile allowing everything",
        "services:\n  web:\n    image: x\n    security_opt: ['seccomp={\"defaultAction\":\"SCMP_ACT_ALLOW\"}']\n",
        "services.web.security_opt[0]",
        "confinement",
    ),
    (
        "empty seccomp profile",
        "services:\n  web:\n    image: x\n    security_opt: [\"seccomp={}\"]\n",
        "services.web.security_opt[0]",
        "confinement",
    ),
    (
        "SELinux super-privileged type",
        "services:\n  web:\n    image: x\n    security_opt: [\"label=type:spc_t\"]\n",
        "services.web.security_opt[0]",
        "confinement",
    ),
    (
        "custom AppArmor profile",
        "services:\n  web:\n    image: x\n    security_opt: [\"apparmor=docker-unconfined\"]\n",
        "services.web.security_opt[0]",
        "no-new-privileges",
    ),
    (
        "network_mode naming another network",
        "services:\n  web:\n    image: x\n    network_mode: play-3fa91c-edge\n",
        "services.web.network_mode",
        "outside the project",
    ),
    (
        "external network",
        "services:\n  web:\n    image: x\n    networks: [shared]\nnetworks:\n  shared:\n    external: true\n    name: other-tenant_default\n",
        "networks.shared.external",
        "external network",
    ),
    (
        "external volume",
        "services:\n  web:\n    image: x\n    volumes: [\"loot:/loot\"]\nvolumes:\n  loot:\n    external: true\n    name: other-tenant_db\n",
        "volumes.loot.external",
        "external volume",
    ),
    (
        "macvlan network",
        "services:\n  web:\n    image: x\n    networks: [lan]\nnetworks:\n  lan:\n    driver: macvlan\n",
        "networks.lan.driver",
        "macvlan",
    ),
    (
        "ipvlan network",
        "services:\n  web:\n    image: x\n    networks: [lan]\nnetworks:\n  lan:\n    driver: ipvlan\n",
        "networks.lan.driver",
        "ipvlan",
    ),
    (
        "bridge named like a host interface",
        "services:\n  web:\n    image: x\n    networks: [n]\nnetworks:\n  n:\n    driver_opts: {com.docker.network.bridge.name: docker0}\n",
        "networks.n.driver_opts.com.docker.network.bridge.name",
        "network option",
    ),
    (
        "volume plugin driver",
        "services:\n  web:\n    image: x\n    volumes: [\"d:/d\"]\nvolumes:\n  d:\n    driver: rexray/ebs\n",
        "volumes.d.driver",
        "rexray",
    ),
    (
        "nfs volume",
        "services:\n  web:\n    image: x\n    volumes: [\"d:/d\"]\nvolumes:\n  d:\n    driver_opts: {type: nfs, o: \"addr=10.0.0.1,rw\", device: \":/exports\"}\n",
        "volumes.d.driver_opts",
        "file server",
    ),
    (
        "secret from host file",
        "services:\n  web:\n    image: x\n    secrets: [key]\nsecrets:\n  key:\n    file: /etc/ssl/private/key.pem\n",
        "secrets.key.file",
        "host file",
    ),
    (
        "config from host file",
        "services:\n  web:\n    image: x\nconfigs:\n  app:\n    file: /etc/app.conf\n",
        "configs.app.file",
        "host file",
    ),
    (
        "config from a relative file no mounted file provides",
        "services:\n  web:\n    image: x\n    configs: [app]\nconfigs:\n  app:\n    file: ./app.conf\n",
        "configs.app.file",
        "add_mounted_file with path `app.conf`",
    ),
    (
        "absolute env_file",
        "services:\n  web:\n    image: x\n    env_file: /etc/environment\n",
        "services.web.env_file[0]",
        "outside the project",
    ),
    (
        "escaping env_file",
        "services:\n  web:\n    image: x\n    env_file: [{path: ../../secrets.env}]\n",
        "services.web.env_file[0]",
        "outside the project",
    ),
    ("absolute build context", "services:\n  web:\n    build: /\n", "services.web.build", "outside the project"),
    (
        "escaping build context",
        "services:\n  web:\n    build: {context: ../other}\n",
        "services.web.build",
        "outside the project",
    ),
];

#[test]
fn untrusted_refuses_and_trusted_accepts() {
    for (what, yaml, path, fragment) in REFUSALS {
        let untrusted = validate_compose(yaml, &Policy::UNTRUSTED);
        assert!(
            untrusted.errors.iter().any(|e| e.path == *path && e.message.contains(fragment)),
            "{what}: expected a refusal at {path}, got {:?}",
            untrusted.errors
        );
        assert_eq!(untrusted.errors.len(), 1, "{what}: {:?}", untrusted.errors);
        let trusted = validate_compose(yaml, &Policy::TRUSTED);
        assert!(trusted.valid, "{what}: trusted should accept, got {:?}", trusted.errors);
    }
}

#[test]
fn allowed_under_untrusted() {
    let yaml = r#"
services:
  web:
    image: nginx
    cap_add: [NET_BIND_SERVICE, chown, CAP_SETUID]
    cap_drop: [ALL]
    security_opt: ["no-new-privileges:true"]
    network_mode: "service:api"
    volumes:
      - data:/data
      - /scratch
      - type: tmpfs
        target: /tmp
      - type: volume
        source: data
        target: /more
    env_file: [.env, config/app.env]
    tmpfs: [/run]
  api:
    build:
      context: ./api
    pid: "service:web"
    volumes_from: [web]
    networks: [back]
  worker:
    image: busybox
    network_mode: none
  solo:
    image: busybox
    network_mode: bridge
volumes:
  data: {}
  scratch:
    driver: local
    driver_opts: {type: tmpfs, device: tmpfs, o: "size=64m,mode=1777,noexec"}
networks:
  back:
    driver: bridge
    internal: true
    driver_opts: {com.docker.network.driver.mtu: "1400"}
secrets:
  token:
    environment: TOKEN
configs:
  app:
    content: "x=1"
"#;
    let report = validate_compose(yaml, &Policy::UNTRUSTED);
    assert!(report.valid, "{:?}", report.errors);
}

#[test]
fn a_refusal_names_its_line() {
    let report = validate_compose("services:\n  web:\n    image: x\n\n    privileged: true\n", &Policy::UNTRUSTED);
    assert_eq!(report.errors[0].line, Some(5));
}
