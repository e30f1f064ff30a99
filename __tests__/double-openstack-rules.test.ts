/**
 * The OpenStack API double rejects what Nova, Cinder, Neutron, Keystone and Octavia reject, with their
 * status codes and messages (each rule cites its upstream file in __tests__/doubles/openstack/), and
 * accepts what they accept; Glance lists images with its filters. Requests go straight to the API, as the provider would send them.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { NO_VALID_HOST } from "./doubles/openstack/nova";
import { NOBLE_IMAGE, OpenStackDouble, startOpenStackDouble, WIKI_IMAGE } from "./doubles/openstack/server";
import { authenticate as authenticateTo, issueToken } from "./support/openstack-double";

let double: OpenStackDouble;
let token: string;

beforeEach(async () => {
  double = await startOpenStackDouble();
  token = await issueToken(double);
});

afterEach(async () => {
  expect(double.unhandled).toEqual([]);
  await double.close();
});

function authenticate(scope?: unknown, identity?: unknown): Promise<Response> {
  return authenticateTo(double, scope, identity);
}

interface Answer {
  status: number;
  body: any;
}

async function api(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(`${double.url}${url}`, {
    method,
    headers: { "x-auth-token": token, "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text) };
}

/** The message of an error answer, whatever the service's format. */
function message(answer: Answer): string {
  const [error] = Object.values(answer.body as Record<string, { message: string }>);
  return error.message;
}

function newKey(type = "ed25519"): { line: string; md5: string } {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-key-")), "key");
  execFileSync("ssh-keygen", ["-q", "-t", type, "-N", "", "-C", "rules", "-f", file]);
  const md5 = execFileSync("ssh-keygen", ["-l", "-E", "md5", "-f", `${file}.pub`], { encoding: "utf8" })
    .split(" ")[1]
    .replace(/^MD5:/, "");
  return { line: fs.readFileSync(`${file}.pub`, "utf8").trim(), md5 };
}

const NOVA = "/compute/v2.1";
const MICROVERSION = (v: string) => ({ "openstack-api-version": `compute ${v}`, "x-openstack-nova-api-version": v });

describe("Nova", () => {
  it("serves a keypair by a name of 255 characters, Nova's longest: no URL is too long for it", async () => {
    const { line } = newKey();
    const name = "k".repeat(255);
    const created = await api("POST", `${NOVA}/os-keypairs`, { keypair: { name, public_key: line } });
    expect(created.status).toBe(200);
    const shown = await api("GET", `${NOVA}/os-keypairs/${name}`);
    expect([shown.status, (shown.body as any).keypair?.name]).toEqual([200, name]);
    expect((await api("DELETE", `${NOVA}/os-keypairs/${name}`)).status).toBe(202);
    expect((await api("GET", `${NOVA}/os-keypairs/${name}`)).status).toBe(404);
  });

  it("refuses dots in keypair names before microversion 2.92 and accepts them from it", async () => {
    const { line } = newKey();
    const old = await api("POST", `${NOVA}/os-keypairs`, { keypair: { name: "lab.example.org-deploy", public_key: line } });
    expect(old.status).toBe(400);
    expect(message(old)).toBe(
      "Invalid input for field/attribute name. Value: lab.example.org-deploy. 'lab.example.org-deploy' does not match '^[_\\\\- a-zA-Z0-9]+$'",
    );
    const underscores = await api("POST", `${NOVA}/os-keypairs`, { keypair: { name: "lab_example_org-deploy", public_key: line } });
    expect(underscores.status).toBe(200);
    const v292 = await api(
      "POST",
      `${NOVA}/os-keypairs`,
      { keypair: { name: "lab.example.org-deploy", public_key: line } },
      MICROVERSION("2.92"),
    );
    expect(v292.status).toBe(200);
  });

  it("parses public keys as Nova does: a truncated or made-up key is invalid, a real one gets its MD5 fingerprint", async () => {
    for (const bad of ["ssh-ed25519 A", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOX2EFSHSrU", "ssh-rsa AAAAB3NzaC1yc2E= x"]) {
      const answer = await api("POST", `${NOVA}/os-keypairs`, { keypair: { name: "bad", public_key: bad } });
      expect({ bad, status: answer.status, message: message(answer) }).toEqual({
        bad,
        status: 400,
        message: "Keypair data is invalid: failed to generate fingerprint",
      });
    }
    for (const type of ["ed25519", "rsa", "ecdsa"]) {
      const { line, md5 } = newKey(type);
      const answer = await api("POST", `${NOVA}/os-keypairs`, { keypair: { name: `good-${type}`, public_key: line } });
      expect(answer.body.keypair.fingerprint).toBe(md5);
    }
  });

  it("shows a keypair's type only from microversion 2.2, as Nova does", async () => {
    const { line } = newKey("ed25519");
    const plain = await api("POST", `${NOVA}/os-keypairs`, { keypair: { name: "typeless", public_key: line } });
    expect(plain.body.keypair).not.toHaveProperty("type");
    expect((await api("GET", `${NOVA}/os-keypairs/typeless`)).body.keypair).not.toHaveProperty("type");
    const v22 = { "x-openstack-nova-api-version": "2.2" };
    expect((await api("GET", `${NOVA}/os-keypairs/typeless`, undefined, v22)).body.keypair.type).toBe("ssh");
    const typed = await api("POST", `${NOVA}/os-keypairs`, { keypair: { name: "typed", public_key: newKey("rsa").line } }, v22);
    expect(typed.body.keypair.type).toBe("ssh");
  });

  it("enforces the key_pairs, instances, cores, ram, server_groups and server_group_members quotas with Nova's 403s", async () => {
    const quota = await api("GET", `${NOVA}/os-quota-sets/${double.identity.project.id}`);
    expect(quota.body.quota_set).toMatchObject({
      instances: 10,
      cores: 20,
      ram: 51200,
      key_pairs: 100,
      server_groups: 10,
      server_group_members: 10,
    });

    double.nova.quotas.key_pairs = 0;
    const keypair = await api("POST", `${NOVA}/os-keypairs`, { keypair: { name: "k", public_key: newKey().line } });
    expect([keypair.status, message(keypair)]).toEqual([403, "Quota exceeded, too many key pairs."]);

    const group = await api("POST", `${NOVA}/os-server-groups`, { server_group: { name: "g", policies: ["anti-affinity"] } });
    double.nova.quotas.server_groups = 1;
    const second = await api("POST", `${NOVA}/os-server-groups`, { server_group: { name: "h", policies: ["affinity"] } });
    expect([second.status, message(second)]).toEqual([403, "Quota exceeded, too many server groups."]);

    double.nova.quotas.server_group_members = 1;
    const hints = { "os:scheduler_hints": { group: group.body.server_group.id } };
    expect((await api("POST", `${NOVA}/servers`, { server: server("a"), ...hints })).status).toBe(202);
    const member = await api("POST", `${NOVA}/servers`, { server: server("b"), ...hints });
    expect([member.status, message(member)]).toEqual([403, "Quota exceeded, too many servers in group"]);

    double.nova.quotas.cores = 5;
    const cores = await api("POST", `${NOVA}/servers`, { server: server("c") });
    expect([cores.status, message(cores)]).toEqual([403, "Quota exceeded for cores: Requested 4, but already used 4 of 5 cores"]);
    Object.assign(double.nova.quotas, { cores: 4, instances: 1, ram: 8192 });
    const all = await api("POST", `${NOVA}/servers`, { server: server("d") });
    expect(message(all)).toBe(
      "Quota exceeded for cores, instances, ram: Requested 4, 1, 8192, but already used 4, 1, 8192 of 4, 1, 8192 cores, instances, ram",
    );
    const detail = await api("GET", `${NOVA}/os-quota-sets/${double.identity.project.id}/detail`);
    expect(detail.body.quota_set.instances).toEqual({ limit: 1, in_use: 1, reserved: 0 });
  });

  it("refuses server names over 255 characters or with outer spaces, zero-disk flavors without a boot volume, and unknown images", async () => {
    expect((await api("POST", `${NOVA}/servers`, { server: server("n".repeat(255)) })).status).toBe(202);
    const long = await api("POST", `${NOVA}/servers`, { server: server("n".repeat(256)) });
    expect([long.status, message(long)]).toEqual([
      400,
      `Invalid input for field/attribute name. Value: ${"n".repeat(256)}. '${"n".repeat(256)}' is too long`,
    ]);
    expect((await api("POST", `${NOVA}/servers`, { server: server(" padded") })).status).toBe(400);
    const zeroDisk = await api("POST", `${NOVA}/servers`, { server: { ...server("z"), flavorRef: "6" } });
    expect([zeroDisk.status, message(zeroDisk)]).toEqual([403, "Only volume-backed servers are allowed for flavors with zero disk."]);
    const image = await api("POST", `${NOVA}/servers`, { server: { ...server("i"), imageRef: "00000000-0000-0000-0000-000000000000" } });
    expect([image.status, message(image)]).toEqual([400, "Can not find requested image"]);
  });

  it("builds and deletes servers asynchronously, and leaves one in ERROR with a fault when hard anti-affinity has no host left or a failure is injected", async () => {
    double.nova.hosts = 2;
    const group = await api("POST", `${NOVA}/os-server-groups`, { server_group: { name: "g", policies: ["anti-affinity"] } });
    const hints = { "os:scheduler_hints": { group: group.body.server_group.id } };
    const ids: string[] = [];
    for (const name of ["a", "b", "c"]) ids.push((await api("POST", `${NOVA}/servers`, { server: server(name), ...hints })).body.server.id);
    const first = await Promise.all(ids.map((id) => api("GET", `${NOVA}/servers/${id}`)));
    expect(first.map((a) => a.body.server.status)).toEqual(["BUILD", "BUILD", "BUILD"]);
    // One at a time: the scheduler places them in the order it sees them.
    const then: Answer[] = [];
    for (const id of ids) then.push(await api("GET", `${NOVA}/servers/${id}`));
    expect(then.map((a) => a.body.server.status)).toEqual(["ACTIVE", "ACTIVE", "ERROR"]);
    expect(then[2].body.server.fault).toMatchObject({ code: 500, message: NO_VALID_HOST });

    const stop = double.nova.failServers((name) => name === "doomed", "Build of instance aborted: Volume attach failed.");
    const doomed = (await api("POST", `${NOVA}/servers`, { server: server("doomed") })).body.server.id;
    stop();
    await api("GET", `${NOVA}/servers/${doomed}`);
    const shown = await api("GET", `${NOVA}/servers/${doomed}`);
    expect(shown.body.server).toMatchObject({ status: "ERROR", fault: { message: "Build of instance aborted: Volume attach failed." } });
    // Never placed on a host, it is deleted by the API at once; a placed one takes a read more.
    expect((await api("DELETE", `${NOVA}/servers/${doomed}`)).status).toBe(204);
    expect((await api("GET", `${NOVA}/servers/${doomed}`)).status).toBe(404);
    expect((await api("DELETE", `${NOVA}/servers/${ids[0]}`)).status).toBe(204);
    const deleting = await api("GET", `${NOVA}/servers/${ids[0]}`);
    expect(deleting.body.server).toMatchObject({ status: "ACTIVE", "OS-EXT-STS:task_state": "deleting" });
    expect((await api("GET", `${NOVA}/servers/${ids[0]}`)).status).toBe(404);
  });

  it("stops and starts a server as Nova does: 202, SHUTOFF with vm_state stopped and power state 4, 409 from the wrong state", async () => {
    const id = (await api("POST", `${NOVA}/servers`, { server: server("a") })).body.server.id;
    await api("GET", `${NOVA}/servers/${id}`);
    expect((await api("GET", `${NOVA}/servers/${id}`)).body.server.status).toBe("ACTIVE");
    const started = await api("POST", `${NOVA}/servers/${id}/action`, { "os-start": null });
    expect([started.status, message(started)]).toEqual([409, `Cannot 'start' instance ${id} while it is in vm_state active`]);
    expect((await api("POST", `${NOVA}/servers/${id}/action`, { "os-stop": null })).status).toBe(202);
    expect((await api("GET", `${NOVA}/servers/${id}`)).body.server).toMatchObject({
      status: "SHUTOFF",
      "OS-EXT-STS:vm_state": "stopped",
      "OS-EXT-STS:power_state": 4,
      "OS-EXT-STS:task_state": null,
    });
    const stopped = await api("POST", `${NOVA}/servers/${id}/action`, { "os-stop": null });
    expect([stopped.status, message(stopped)]).toEqual([409, `Cannot 'stop' instance ${id} while it is in vm_state stopped`]);
    expect((await api("POST", `${NOVA}/servers/${id}/action`, { "os-start": null })).status).toBe(202);
    expect((await api("GET", `${NOVA}/servers/${id}`)).body.server).toMatchObject({ status: "ACTIVE", "OS-EXT-STS:power_state": 1 });
  });

  it("attaches a volume after the flavor's ephemeral disk and swap", async () => {
    const id = (await api("POST", `${NOVA}/servers`, { server: { ...server("e"), flavorRef: "5" } })).body.server.id;
    const volume = (await api("POST", `/volume/v3/${double.identity.project.id}/volumes`, { volume: { size: 1, name: "v" } })).body.volume
      .id;
    await api("GET", `/volume/v3/${double.identity.project.id}/volumes/${volume}`);
    await api("GET", `/volume/v3/${double.identity.project.id}/volumes/${volume}`);
    const attached = await api("POST", `${NOVA}/servers/${id}/os-volume_attachments`, { volumeAttachment: { volumeId: volume } });
    expect(attached.body.volumeAttachment.device).toBe("/dev/vdd");
  });

  it("lists its zones, sorted (the detail only to admins), and refuses a server in a zone it does not have", async () => {
    expect((await api("GET", `${NOVA}/os-availability-zone`)).body).toEqual({
      availabilityZoneInfo: [{ zoneName: "nova", zoneState: { available: true }, hosts: null }],
    });
    await double.close();
    double = await startOpenStackDouble({ availabilityZones: ["az2", "az1"] });
    token = await issueToken(double);
    const zones = await api("GET", `${NOVA}/os-availability-zone`);
    expect(zones.body.availabilityZoneInfo.map((z: { zoneName: string }) => z.zoneName)).toEqual(["az1", "az2"]);
    const detail = await api("GET", `${NOVA}/os-availability-zone/detail`);
    expect([detail.status, message(detail)]).toEqual([
      403,
      "Policy doesn't allow os_compute_api:os-availability-zone:detail to be performed.",
    ]);
    const unknown = await api("POST", `${NOVA}/servers`, { server: { ...server("u"), availability_zone: "nova" } });
    expect([unknown.status, message(unknown)]).toEqual([400, "The requested availability zone is not available"]);
    const placed = (await api("POST", `${NOVA}/servers`, { server: { ...server("p"), availability_zone: "az1" } })).body.server.id;
    expect((await api("GET", `${NOVA}/servers/${placed}`)).body.server["OS-EXT-AZ:availability_zone"]).toBe("az1");
    const unplaced = (await api("POST", `${NOVA}/servers`, { server: server("q") })).body.server.id;
    expect((await api("GET", `${NOVA}/servers/${unplaced}`)).body.server["OS-EXT-AZ:availability_zone"]).toBe("");
    expect((await api("GET", `${NOVA}/servers/${unplaced}`)).body.server["OS-EXT-AZ:availability_zone"]).toMatch(/^az[12]$/);
  });

  it("refuses block device mappings as Nova does: no size for an image copied to a volume, an unknown volume type or image, a bad boot sequence, volume_type before 2.67", async () => {
    const bdm = (extra: Record<string, unknown> = {}) => ({
      server: {
        ...server("v"),
        imageRef: "",
        block_device_mapping_v2: [
          { boot_index: 0, uuid: WIKI_IMAGE.id, source_type: "image", destination_type: "volume", volume_size: 10, ...extra },
        ],
      },
    });
    const v267 = MICROVERSION("2.67");
    const noSize = await api("POST", `${NOVA}/servers`, bdm({ volume_size: undefined }));
    expect([noSize.status, message(noSize)]).toEqual([400, "Images with destination_type 'volume' need to have a non-zero size specified"]);
    const type = await api("POST", `${NOVA}/servers`, bdm({ volume_type: "fast" }), v267);
    expect([type.status, message(type)]).toEqual([400, "Volume type fast could not be found."]);
    const early = await api("POST", `${NOVA}/servers`, bdm({ volume_type: "__DEFAULT__" }));
    expect([early.status, message(early)]).toEqual([
      400,
      `Invalid input for field/attribute 0. Value: {'boot_index': 0, 'uuid': '${WIKI_IMAGE.id}', 'source_type': 'image', 'destination_type': 'volume', 'volume_size': 10, 'volume_type': '__DEFAULT__'}. Additional properties are not allowed ('volume_type' was unexpected)`,
    ]);
    const image = await api("POST", `${NOVA}/servers`, bdm({ uuid: "00000000-0000-0000-0000-000000000000" }));
    expect([image.status, message(image)]).toEqual([
      400,
      "Block Device Mapping is Invalid: failed to get image 00000000-0000-0000-0000-000000000000.",
    ]);
    const sequence = await api("POST", `${NOVA}/servers`, bdm({ boot_index: 1 }));
    expect([sequence.status, message(sequence)]).toEqual([
      400,
      "Block Device Mapping is Invalid: Boot sequence for the instance and image/block device mapping combination is not valid.",
    ]);
    expect((await api("POST", `${NOVA}/servers`, bdm({ volume_type: "__DEFAULT__" }), v267)).status).toBe(202);
  });

  it("creates a boot volume in Cinder's default zone at build time, keeps it unless delete_on_termination, and fails the build over Cinder's quota", async () => {
    const boot = (name: string, size: number, deleteOnTermination: boolean) => ({
      server: {
        ...server(name),
        imageRef: "",
        block_device_mapping_v2: [
          {
            boot_index: 0,
            uuid: WIKI_IMAGE.id,
            source_type: "image",
            destination_type: "volume",
            volume_size: size,
            delete_on_termination: deleteOnTermination,
          },
        ],
      },
    });
    const kept = (await api("POST", `${NOVA}/servers`, boot("kept", 10, false))).body.server.id;
    const gone = (await api("POST", `${NOVA}/servers`, boot("gone", 10, true))).body.server.id;
    for (const id of [kept, gone]) for (let n = 0; n < 2; n++) await api("GET", `${NOVA}/servers/${id}`);
    // delete_on_termination is shown from microversion 2.3 (nova/api/openstack/compute/views/servers.py).
    expect((await api("GET", `${NOVA}/servers/${kept}`)).body.server["os-extended-volumes:volumes_attached"]).toEqual([
      { id: expect.any(String) },
    ]);
    const shown = (await api("GET", `${NOVA}/servers/${kept}`, undefined, { "x-openstack-nova-api-version": "2.3" })).body.server;
    const [volume] = shown["os-extended-volumes:volumes_attached"];
    expect(volume.delete_on_termination).toBe(false);
    const cinder = await api("GET", `/volume/v3/${double.identity.project.id}/volumes/${volume.id}`);
    expect(cinder.body.volume).toMatchObject({
      status: "in-use",
      availability_zone: "nova",
      volume_image_metadata: { image_id: WIKI_IMAGE.id },
    });
    const quota = await api("GET", `/volume/v3/${double.identity.project.id}/os-quota-sets/${double.identity.project.id}?usage=true`);
    expect(quota.body.quota_set).toMatchObject({ volumes: { in_use: 2 }, gigabytes: { in_use: 20 } });

    for (const id of [kept, gone]) {
      await api("DELETE", `${NOVA}/servers/${id}`);
      // One read shows it deleting, the next finds it gone.
      await api("GET", `${NOVA}/servers/${id}`);
      expect((await api("GET", `${NOVA}/servers/${id}`)).status).toBe(404);
    }
    expect(double.cinder.volumes.all().map((v) => [v.id, v.status])).toEqual([[volume.id, "available"]]);

    double.cinder.quotas.gigabytes = 15;
    const over = (await api("POST", `${NOVA}/servers`, boot("over", 10, true))).body.server.id;
    await api("GET", `${NOVA}/servers/${over}`);
    const failed = (await api("GET", `${NOVA}/servers/${over}`)).body.server;
    expect(failed).toMatchObject({
      status: "ERROR",
      fault: {
        message: `Build of instance ${over} aborted: Requested volume or snapshot exceeds allowed gigabytes quota. Requested 10G, quota is 15G and 10G has been consumed.`,
      },
    });
  });
});

describe("Cinder", () => {
  const volumes = () => `/volume/v3/${double.identity.project.id}/volumes`;

  it("enforces the volumes and gigabytes quotas with 413s, and names of at most 255 characters", async () => {
    const quota = await api("GET", `/volume/v3/${double.identity.project.id}/os-quota-sets/${double.identity.project.id}?usage=true`);
    expect(quota.body.quota_set).toMatchObject({ volumes: { limit: 10, in_use: 0 }, gigabytes: { limit: 1000, in_use: 0 } });
    const big = await api("POST", volumes(), { volume: { size: 1001 } });
    expect([big.status, message(big)]).toEqual([
      413,
      "Requested volume or snapshot exceeds allowed gigabytes quota. Requested 1001G, quota is 1000G and 0G has been consumed.",
    ]);
    double.cinder.quotas.volumes = 1;
    expect((await api("POST", volumes(), { volume: { size: 1 } })).status).toBe(202);
    const second = await api("POST", volumes(), { volume: { size: 1 } });
    expect([second.status, message(second)]).toEqual([413, "Maximum number of volumes allowed (1) exceeded for quota 'volumes'."]);
    double.cinder.quotas.volumes = 10;
    const named = await api("POST", volumes(), { volume: { size: 1, name: "v".repeat(256) } });
    expect([named.status, message(named)]).toEqual([400, "Invalid input received: name has 256 characters, more than 255."]);
  });

  it("shows a new volume creating before it is available, or in error when a failure is injected", async () => {
    const created = (await api("POST", volumes(), { volume: { size: 1 } })).body.volume;
    const id = created.id;
    // Its project shows on GET alone (cinder/api/contrib/volume_tenant_attribute.py extends show and detail).
    expect("os-vol-tenant-attr:tenant_id" in created).toBe(false);
    const shown = (await api("GET", `${volumes()}/${id}`)).body.volume;
    expect([shown.status, shown["os-vol-tenant-attr:tenant_id"]]).toEqual(["creating", double.identity.project.id]);
    expect((await api("GET", `${volumes()}/${id}`)).body.volume.status).toBe("available");
    double.cinder.failVolumes((name) => name === "broken");
    const broken = (await api("POST", volumes(), { volume: { size: 1, name: "broken" } })).body.volume.id;
    await api("GET", `${volumes()}/${broken}`);
    expect((await api("GET", `${volumes()}/${broken}`)).body.volume.status).toBe("error");
  });

  it("lists its volume types, __DEFAULT__ first, and refuses an unknown type or availability zone", async () => {
    await double.close();
    double = await startOpenStackDouble({ volumeTypes: ["ssd"] });
    token = await issueToken(double);
    const types = await api("GET", `/volume/v3/${double.identity.project.id}/types`);
    expect(types.body.volume_types.map((t: { name: string }) => t.name)).toEqual(["__DEFAULT__", "ssd"]);
    expect(types.body.volume_types[0]).toMatchObject({ description: "Default Volume Type", is_public: true });
    const type = await api("POST", volumes(), { volume: { size: 1, volume_type: "fast" } });
    expect([type.status, message(type)]).toEqual([404, "Volume type with name fast could not be found."]);
    const zone = await api("POST", volumes(), { volume: { size: 1, availability_zone: "az9" } });
    expect([zone.status, message(zone)]).toEqual([400, "Availability zone 'az9' is invalid."]);
    const ssd = await api("POST", volumes(), { volume: { size: 1, volume_type: "ssd" } });
    expect(ssd.body.volume).toMatchObject({ volume_type: "ssd", availability_zone: "nova" });
  });
});

describe("Keystone", () => {
  it("answers a scope to an unknown project with 401, and gives an unscoped token no catalog and no project access", async () => {
    expect((await authenticate({ project: { id: "0".repeat(32) } })).status).toBe(401);
    expect((await authenticate({ project: { name: "other", domain: { id: "default" } } })).status).toBe(401);
    const unscoped = await authenticate();
    expect(unscoped.status).toBe(201);
    const body = (await unscoped.json()) as { token: Record<string, unknown> };
    expect(body.token.catalog).toBeUndefined();
    expect(body.token.project).toBeUndefined();
    const refused = await api("GET", "/network/v2.0/networks", undefined, {
      "x-auth-token": unscoped.headers.get("x-subject-token") as string,
    });
    expect(refused.status).toBe(403);
  });

  it("refuses a scope with an application credential, which is bound to its project, and shows a token as it was issued", async () => {
    const { id, secret } = double.identity.applicationCredential;
    const identity = { methods: ["application_credential"], application_credential: { id, secret } };
    expect((await authenticate({ project: { id: double.identity.project.id } }, identity)).status).toBe(401);
    const appToken = (await authenticate(undefined, identity)).headers.get("x-subject-token") as string;
    const shown = await api("GET", "/identity/v3/auth/tokens", undefined, { "x-subject-token": appToken });
    expect(shown.body.token).toMatchObject({ methods: ["application_credential"], project: { id: double.identity.project.id } });
  });

  describe("application credentials", () => {
    const credentials = () => `/identity/v3/users/${double.identity.user.id}/application_credentials`;

    it("returns the secret only on create, generating one when none is given, and adds the roles a role implies", async () => {
      const created = await api("POST", credentials(), { application_credential: { name: "a", roles: [{ name: "member" }] } });
      expect(created.status).toBe(201);
      const credential = created.body.application_credential;
      expect(credential.secret).toMatch(/^[A-Za-z0-9_-]{86}$/);
      expect(credential.roles.map((r: { name: string }) => r.name)).toEqual(["member", "reader"]);
      expect(credential).toMatchObject({ unrestricted: false, expires_at: null, project_id: double.identity.project.id });
      const shown = await api("GET", `${credentials()}/${credential.id}`);
      expect(shown.body.application_credential.secret).toBeUndefined();
      // The backend's record as every reply shows it: its user, each role in full, no empty access rules.
      const { secret: _secret, ...record } = credential;
      expect(shown.body.application_credential).toEqual(record);
      expect(record).toMatchObject({ user_id: double.identity.user.id, system: null });
      expect("access_rules" in record).toBe(false);
      expect(record.roles[0]).toEqual({
        id: double.identity.roles.find((r) => r.name === "member")!.id,
        name: "member",
        domain_id: null,
        description: null,
        options: { immutable: true },
      });
      const given = await api("POST", credentials(), { application_credential: { name: "b", secret: "chosen" } });
      expect(given.body.application_credential.secret).toBe("chosen");
      // Without roles, the token's: the user's effective roles.
      expect(given.body.application_credential.roles.map((r: { name: string }) => r.name)).toEqual([
        "member",
        "reader",
        "load-balancer_member",
      ]);
    });

    it("refuses roles the user lacks or Keystone does not know, a duplicate name, a past expiry, and another user's credentials", async () => {
      const create = (body: Record<string, unknown>) => api("POST", credentials(), { application_credential: { name: "c", ...body } });
      const admin = await create({ roles: [{ name: "admin" }] });
      expect([admin.status, message(admin)]).toEqual([
        400,
        "Invalid application credential: Cannot create an application credential with unassigned role",
      ]);
      const unknown = await create({ roles: [{ name: "nope" }] });
      expect([unknown.status, message(unknown)]).toEqual([404, "Role nope is not defined"]);
      const past = await create({ expires_at: "2020-01-01T00:00:00" });
      expect([past.status, message(past)]).toEqual([
        400,
        "The 'expires_at' must not be before now. The server could not comply with the request since it is either malformed or otherwise incorrect. The client is assumed to be in error.",
      ]);
      expect((await create({})).status).toBe(201);
      const duplicate = await create({});
      expect([duplicate.status, duplicate.body.error]).toEqual([
        409,
        {
          code: 409,
          title: "Conflict",
          message: "Conflict occurred attempting to store application_credential - Duplicate entry found with name c.",
        },
      ]);
      const other = await api("POST", `/identity/v3/users/${"0".repeat(32)}/application_credentials`, {
        application_credential: { name: "d" },
      });
      expect([other.status, message(other)]).toEqual([
        403,
        "You are not authorized to perform the requested action: identity:create_application_credential.",
      ]);
    });

    it("refuses to manage credentials with a restricted application credential, allows it with an unrestricted one, and revokes a deleted one's tokens", async () => {
      const { id, secret } = double.identity.applicationCredential;
      const restricted = (
        await authenticate(undefined, { methods: ["application_credential"], application_credential: { id, secret } })
      ).headers.get("x-subject-token") as string;
      const refused = await api("POST", credentials(), { application_credential: { name: "e" } }, { "x-auth-token": restricted });
      expect([refused.status, message(refused)]).toEqual([
        403,
        "You are not authorized to perform the requested action: Using method 'application_credential' is not allowed for managing additional application credentials..",
      ]);
      const open = (await api("POST", credentials(), { application_credential: { name: "f", unrestricted: true } })).body
        .application_credential;
      const identity = { methods: ["application_credential"], application_credential: { id: open.id, secret: open.secret } };
      const unrestricted = (await authenticate(undefined, identity)).headers.get("x-subject-token") as string;
      const allowed = await api("POST", credentials(), { application_credential: { name: "g" } }, { "x-auth-token": unrestricted });
      expect(allowed.status).toBe(201);
      expect((await api("DELETE", `${credentials()}/${open.id}`)).status).toBe(204);
      expect((await api("GET", "/network/v2.0/networks", undefined, { "x-auth-token": unrestricted })).status).toBe(401);
      expect((await authenticate(undefined, identity)).status).toBe(401);
      const missing = await api("GET", `${credentials()}/${open.id}`);
      expect([missing.status, message(missing)]).toEqual([404, `Could not find Application Credential: ${open.id}.`]);
    });

    it("refuses a project member the role list, as Keystone's policy does", async () => {
      const roles = await api("GET", "/identity/v3/roles?name=member");
      expect([roles.status, message(roles)]).toEqual([403, "You are not authorized to perform the requested action: identity:list_roles."]);
    });

    it("shares equal access rules, and refuses to delete one still in use", async () => {
      const rule = { service: "image", path: "/v2/images", method: "GET" };
      const first = (await api("POST", credentials(), { application_credential: { name: "h", access_rules: [rule] } })).body
        .application_credential;
      const second = (await api("POST", credentials(), { application_credential: { name: "i", access_rules: [rule] } })).body
        .application_credential;
      expect(second.access_rules).toEqual(first.access_rules);
      const rules = `/identity/v3/users/${double.identity.user.id}/access_rules`;
      const inUse = await api("DELETE", `${rules}/${first.access_rules[0].id}`);
      expect([inUse.status, message(inUse)]).toEqual([403, "May not delete access rule in use"]);
      await api("DELETE", `${credentials()}/${first.id}`);
      await api("DELETE", `${credentials()}/${second.id}`);
      expect((await api("DELETE", `${rules}/${first.access_rules[0].id}`)).status).toBe(204);
      expect(double.resourceCount()).toBe(0);
    });
  });
});

describe("Neutron", () => {
  const N = "/network/v2.0";
  async function network(name = "n"): Promise<string> {
    return (await api("POST", `${N}/networks`, { network: { name } })).body.network.id;
  }
  async function subnet(networkId: string, cidr: string, extra: Record<string, unknown> = {}): Promise<Answer> {
    return api("POST", `${N}/subnets`, { subnet: { network_id: networkId, cidr, ip_version: 4, ...extra } });
  }
  const external = () => double.neutron.networks.all().find((n) => n["router:external"] === true)?.id as string;

  it("shows a port's binding, a subnet's segment and a router's distributed and ha to admins alone", async () => {
    const networkId = await network();
    const subnetId = (await subnet(networkId, "10.9.0.0/24")).body.subnet.id;
    const portId = (await api("POST", `${N}/ports`, { port: { network_id: networkId } })).body.port.id;
    const routerId = (await api("POST", `${N}/routers`, { router: { name: "r" } })).body.router.id;
    const fields = async () => {
      const router = (await api("GET", `${N}/routers/${routerId}`)).body.router;
      return {
        port: Object.keys((await api("GET", `${N}/ports/${portId}`)).body.port).filter((f) => f.startsWith("binding:")),
        subnet: "segment_id" in (await api("GET", `${N}/subnets/${subnetId}`)).body.subnet,
        router: ["distributed", "ha"].filter((f) => f in router),
        network: (await api("GET", `${N}/networks/${networkId}`)).body.network.vlan_transparent,
      };
    };
    expect(await fields()).toEqual({ port: ["binding:vnic_type"], subnet: false, router: [], network: false });
    (double.identity as { assignedRoles: readonly string[] }).assignedRoles = ["admin"];
    token = await issueToken(double);
    expect(await fields()).toEqual({
      port: ["binding:vnic_type", "binding:host_id", "binding:profile", "binding:vif_details", "binding:vif_type"],
      subnet: true,
      router: ["distributed", "ha"],
      network: false,
    });
  });

  it("gives the project's default security group Neutron's four default rules, and a new group the two egress ones", async () => {
    const shape = (rules: any[]) =>
      rules.map((r) => `${r.direction} ${r.ethertype} ${r.remote_group_id === null ? "any" : "group"} ${r.belongs_to_default_sg}`).sort();
    const groups = (await api("GET", `${N}/security-groups?name=default`)).body.security_groups;
    expect(groups).toHaveLength(1);
    expect(shape(groups[0].security_group_rules)).toEqual([
      "egress IPv4 any true",
      "egress IPv6 any true",
      "ingress IPv4 group true",
      "ingress IPv6 group true",
    ]);
    for (const rule of groups[0].security_group_rules.filter((r: any) => r.direction === "ingress")) {
      expect(rule.remote_group_id).toBe(groups[0].id);
    }
    const other = (await api("POST", `${N}/security-groups`, { security_group: { name: "web" } })).body.security_group;
    expect(shape(other.security_group_rules)).toEqual(["egress IPv4 any false", "egress IPv6 any false"]);
  });

  it("refuses names over 255 characters, duplicate nameservers and a gateway on the network or broadcast address, and accepts a gateway outside the CIDR", async () => {
    const long = await api("POST", `${N}/networks`, { network: { name: "x".repeat(256) } });
    expect([long.status, long.body.NeutronError.message]).toEqual([
      400,
      `Invalid input for name. Reason: '${"x".repeat(256)}' exceeds maximum length of 255.`,
    ]);
    expect((await api("POST", `${N}/networks`, { network: { name: "x".repeat(255) } })).status).toBe(201);
    const id = await network();
    const duplicate = await subnet(id, "10.5.0.0/24", { dns_nameservers: ["1.1.1.1", "1.1.1.1"] });
    expect([duplicate.status, duplicate.body.NeutronError.message]).toEqual([
      400,
      "Invalid input for dns_nameservers. Reason: Duplicate nameserver '1.1.1.1'.",
    ]);
    const broadcast = await subnet(id, "10.5.0.0/24", { gateway_ip: "10.5.0.255" });
    expect([broadcast.status, broadcast.body.NeutronError.message]).toEqual([
      400,
      "Invalid input for operation: Gateway is not valid on subnet.",
    ]);
    const outside = await subnet(id, "10.5.0.0/24", { gateway_ip: "10.6.0.1" });
    expect(outside.status).toBe(201);
  });

  it("gives every DHCP subnet a DHCP port with a pool address, picks free addresses at random, and drops the DHCP port with the subnet", async () => {
    const id = await network();
    const created = await subnet(id, "10.5.0.0/24", { allocation_pools: [{ start: "10.5.0.100", end: "10.5.0.200" }] });
    const dhcp = double.neutron.ports.all().filter((p) => p.network_id === id && p.device_owner === "network:dhcp");
    expect(dhcp).toHaveLength(1);
    expect(dhcp[0].device_id).toMatch(new RegExp(`^dhcp[0-9a-f]{32}-${id}$`));
    const host = (p: { fixed_ips: unknown }) => Number((p.fixed_ips as { ip_address: string }[])[0].ip_address.split(".")[3]);
    expect(host(dhcp[0] as never)).toBeGreaterThanOrEqual(100);
    const hosts: number[] = [];
    for (let n = 0; n < 20; n++) hosts.push(host((await api("POST", `${N}/ports`, { port: { network_id: id } })).body.port));
    expect(new Set(hosts).size).toBe(20);
    expect(hosts.every((h) => h >= 100 && h <= 200)).toBe(true);
    // In order they would be 101..120 or so; at random, not.
    expect([...hosts].sort((a, b) => a - b)).not.toEqual(hosts);
    for (const port of double.neutron.ports.all().filter((p) => p.network_id === id && p.device_owner === "")) {
      await api("DELETE", `${N}/ports/${port.id}`);
    }
    expect((await api("DELETE", `${N}/subnets/${created.body.subnet.id}`)).status).toBe(204);
    expect(double.neutron.ports.all().filter((p) => p.network_id === id)).toEqual([]);
  });

  it("refuses a router interface overlapping the external network, and floating IPs for unrouted, DHCP or already-served addresses", async () => {
    const router = (await api("POST", `${N}/routers`, { router: { name: "r", external_gateway_info: { network_id: external() } } })).body
      .router.id;
    const id = await network();
    const overlapping = (await subnet(id, "192.0.2.0/25")).body.subnet.id;
    const overlap = await api("PUT", `${N}/routers/${router}/add_router_interface`, { subnet_id: overlapping });
    expect(overlap.status).toBe(400);
    expect(overlap.body.NeutronError.message).toMatch(
      /^Bad router request: Cidr 192\.0\.2\.0\/25 of subnet \S+ overlaps with cidr 192\.0\.2\.0\/24 of subnet \S+\.$/,
    );

    const other = await network("m");
    const sub = (await subnet(other, "10.6.0.0/24")).body.subnet.id;
    const port = (await api("POST", `${N}/ports`, { port: { network_id: other } })).body.port.id;
    const fip = async (portId?: string) =>
      api("POST", `${N}/floatingips`, { floatingip: { floating_network_id: external(), ...(portId ? { port_id: portId } : {}) } });
    const unrouted = await fip(port);
    expect([unrouted.status, unrouted.body.NeutronError.type]).toEqual([404, "ExternalGatewayForFloatingIPNotFound"]);
    expect(unrouted.body.NeutronError.message).toBe(
      `External network ${external()} is not reachable from subnet ${sub}.  Therefore, cannot associate Port ${port} with a Floating IP.`,
    );
    expect((await api("PUT", `${N}/routers/${router}/add_router_interface`, { subnet_id: sub })).status).toBe(200);
    expect((await fip(port)).status).toBe(201);
    const second = await fip();
    const again = await api("PUT", `${N}/floatingips/${second.body.floatingip.id}`, { floatingip: { port_id: port } });
    expect([again.status, again.body.NeutronError.type]).toEqual([409, "FloatingIPPortAlreadyAssociated"]);
    const dhcpPort = double.neutron.ports.all().find((p) => p.network_id === other && p.device_owner === "network:dhcp");
    const onDhcp = await api("PUT", `${N}/floatingips/${second.body.floatingip.id}`, { floatingip: { port_id: dhcpPort?.id } });
    expect([onDhcp.status, onDhcp.body.NeutronError.message]).toEqual([
      400,
      "Bad floatingip request: Port %(id)s is unable to be assigned a floating IP.",
    ]);
    const remove = await api("PUT", `${N}/routers/${router}/remove_router_interface`, { subnet_id: sub });
    expect([remove.status, remove.body.NeutronError.type]).toEqual([409, "RouterInterfaceInUseByFloatingIP"]);
  });

  it("enforces quotas with 409 OverQuota and shows them", async () => {
    expect((await api("GET", `${N}/quotas/${double.identity.project.id}`)).body.quota).toMatchObject({
      floatingip: 50,
      port: 500,
      security_group_rule: 100,
    });
    double.neutron.quotas.floatingip = 0;
    const over = await api("POST", `${N}/floatingips`, { floatingip: { floating_network_id: external() } });
    expect([over.status, over.body.NeutronError]).toEqual([
      409,
      { type: "OverQuota", message: "Quota exceeded for resources: ['floatingip'].", detail: "" },
    ]);
  });
});

describe("Octavia", () => {
  const LB = "/load-balancer/v2.0/lbaas";
  const fault = (answer: Answer) => [answer.status, answer.body.faultstring];
  let subnet: string;

  beforeEach(async () => {
    const network = (await api("POST", "/network/v2.0/networks", { network: { name: "lb" } })).body.network.id;
    subnet = (await api("POST", "/network/v2.0/subnets", { subnet: { network_id: network, cidr: "10.7.0.0/24", ip_version: 4 } })).body
      .subnet.id;
  });

  /** Reads the load balancer until the provider has finished with it. */
  async function settle(lb: string): Promise<void> {
    for (let n = 0; n < 5; n++)
      if ((await api("GET", `${LB}/loadbalancers/${lb}`)).body.loadbalancer.provisioning_status === "ACTIVE") return;
    throw new Error(`load balancer ${lb} never became ACTIVE`);
  }

  async function loadBalancer(): Promise<string> {
    const lb = (await api("POST", `${LB}/loadbalancers`, { loadbalancer: { name: "lb", vip_subnet_id: subnet } })).body.loadbalancer.id;
    await settle(lb);
    return lb;
  }

  async function listener(lb: string, port = 6443, protocol = "TCP"): Promise<Answer> {
    const answer = await api("POST", `${LB}/listeners`, { listener: { loadbalancer_id: lb, protocol, protocol_port: port } });
    if (answer.status === 201) await settle(lb);
    return answer;
  }

  it("lets only the roles Octavia's policy names use it: reader reads, member writes, and load-balancer_member alone only without enforce_new_defaults", async () => {
    /** A token from a new application credential holding only `roles`. */
    const tokenWith = async (roles: string[]) => {
      const created = await api("POST", `/identity/v3/users/${double.identity.user.id}/application_credentials`, {
        application_credential: { name: roles.join("+"), roles: roles.map((name) => ({ name })) },
      });
      const { id, secret } = created.body.application_credential;
      const response = await authenticate(undefined, { methods: ["application_credential"], application_credential: { id, secret } });
      return { "x-auth-token": response.headers.get("x-subject-token") as string };
    };
    const create = { loadbalancer: { vip_subnet_id: subnet } };
    const forbidden = [403, "Policy does not allow this request to be performed."];
    const loadBalancerMember = await tokenWith(["load-balancer_member"]);
    expect(fault(await api("GET", `${LB}/loadbalancers`, undefined, loadBalancerMember))).toEqual(forbidden);
    expect(fault(await api("POST", `${LB}/loadbalancers`, create, loadBalancerMember))).toEqual(forbidden);
    const reader = await tokenWith(["reader"]);
    expect((await api("GET", `${LB}/loadbalancers`, undefined, reader)).status).toBe(200);
    expect(fault(await api("POST", `${LB}/loadbalancers`, create, reader))).toEqual(forbidden);

    await double.close();
    double = await startOpenStackDouble({ loadBalancerEnforceNewDefaults: false });
    token = await issueToken(double);
    const network = (await api("POST", "/network/v2.0/networks", { network: { name: "lb" } })).body.network.id;
    const other = (await api("POST", "/network/v2.0/subnets", { subnet: { network_id: network, cidr: "10.7.0.0/24", ip_version: 4 } })).body
      .subnet.id;
    const legacy = await tokenWith(["load-balancer_member"]);
    expect((await api("POST", `${LB}/loadbalancers`, { loadbalancer: { vip_subnet_id: other } }, legacy)).status).toBe(201);
  });

  it("creates a load balancer PENDING_CREATE with an Octavia-owned VIP port, ACTIVE once the provider is done; refuses one without a VIP, on an unknown subnet, in an unknown zone or over quota", async () => {
    const created = await api("POST", `${LB}/loadbalancers`, { loadbalancer: { name: "lb", vip_subnet_id: subnet } });
    expect(created.status).toBe(201);
    const lb = created.body.loadbalancer;
    expect(lb).toMatchObject({
      provisioning_status: "PENDING_CREATE",
      operating_status: "OFFLINE",
      vip_subnet_id: subnet,
      provider: "amphora",
    });
    expect(double.neutron.ports.get(lb.vip_port_id)).toMatchObject({
      name: `octavia-lb-${lb.id}`,
      device_owner: "Octavia",
      device_id: `lb-${lb.id}`,
      fixed_ips: [{ subnet_id: subnet, ip_address: lb.vip_address }],
    });
    expect((await api("GET", `${LB}/loadbalancers/${lb.id}`)).body.loadbalancer.provisioning_status).toBe("PENDING_CREATE");
    expect((await api("GET", `${LB}/loadbalancers/${lb.id}`)).body.loadbalancer).toMatchObject({
      provisioning_status: "ACTIVE",
      operating_status: "ONLINE",
    });

    expect(fault(await api("POST", `${LB}/loadbalancers`, { loadbalancer: { name: "none" } }))).toEqual([
      400,
      "Validation failure: VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.",
    ]);
    const missing = "00000000-0000-0000-0000-000000000000";
    expect(fault(await api("POST", `${LB}/loadbalancers`, { loadbalancer: { vip_subnet_id: missing } }))).toEqual([
      400,
      `Subnet ${missing} not found.`,
    ]);
    expect(fault(await api("POST", `${LB}/loadbalancers`, { loadbalancer: { vip_subnet_id: subnet, availability_zone: "nova" } }))).toEqual(
      [400, "Validation failure: Invalid availability zone."],
    );
    expect((await api("GET", `${LB}/quotas/${double.identity.project.id}`)).body.quota).toMatchObject({ load_balancer: -1, listener: -1 });
    double.octavia.quotas.load_balancer = 1;
    expect(fault(await api("POST", `${LB}/loadbalancers`, { loadbalancer: { vip_subnet_id: subnet } }))).toEqual([
      403,
      "Quota has been met for resources: Load Balancer",
    ]);
  });

  it("refuses a change under a load balancer that is not ACTIVE with 409, and deletes one only without children (or with cascade) and not while pending", async () => {
    const lb = (await api("POST", `${LB}/loadbalancers`, { loadbalancer: { vip_subnet_id: subnet } })).body.loadbalancer.id;
    expect(
      fault(await api("POST", `${LB}/listeners`, { listener: { loadbalancer_id: lb, protocol: "TCP", protocol_port: 6443 } })),
    ).toEqual([409, `Load Balancer ${lb} is immutable and cannot be updated.`]);
    expect(fault(await api("DELETE", `${LB}/loadbalancers/${lb}`))).toEqual([
      409,
      `Invalid state PENDING_CREATE of loadbalancer resource ${lb}`,
    ]);
    await settle(lb);
    const created = await api("POST", `${LB}/listeners`, { listener: { loadbalancer_id: lb, protocol: "TCP", protocol_port: 6443 } });
    expect(created.body.listener.provisioning_status).toBe("PENDING_CREATE");
    expect((await api("GET", `${LB}/loadbalancers/${lb}`)).body.loadbalancer.provisioning_status).toBe("PENDING_UPDATE");
    expect(
      fault(await api("POST", `${LB}/listeners`, { listener: { loadbalancer_id: lb, protocol: "TCP", protocol_port: 16443 } })),
    ).toEqual([409, `Load Balancer ${lb} is immutable and cannot be updated.`]);
    await settle(lb);
    expect((await api("GET", `${LB}/listeners/${created.body.listener.id}`)).body.listener).toMatchObject({
      provisioning_status: "ACTIVE",
      operating_status: "ONLINE",
    });

    expect(fault(await api("DELETE", `${LB}/loadbalancers/${lb}`))).toEqual([
      400,
      `Validation failure: Cannot delete Load Balancer ${lb} - it has children`,
    ]);
    const vip = double.neutron.ports.all().find((p) => p.device_owner === "Octavia")?.id;
    expect((await api("DELETE", `${LB}/loadbalancers/${lb}?cascade=true`)).status).toBe(204);
    expect((await api("GET", `${LB}/loadbalancers/${lb}`)).body.loadbalancer.provisioning_status).toBe("PENDING_DELETE");
    expect(fault(await api("GET", `${LB}/loadbalancers/${lb}`))).toEqual([404, `Load Balancer ${lb} not found.`]);
    expect(double.octavia.resourceCount()).toBe(0);
    expect(double.neutron.ports.find(String(vip))).toBeUndefined();
  });

  it("refuses listener ports out of range, unknown protocols, and a second listener of the same layer-4 protocol on a port", async () => {
    const lb = await loadBalancer();
    expect(fault(await listener(lb, 70000))).toEqual([
      400,
      "Invalid input for field/attribute protocol_port. Value: '70000'. Value should be lower or equal to 65535",
    ]);
    expect(fault(await listener(lb, 0))).toEqual([
      400,
      "Invalid input for field/attribute protocol_port. Value: '0'. Value should be greater or equal to 1",
    ]);
    const protocol = await listener(lb, 6443, "QUIC");
    expect(protocol.status).toBe(400);
    // wsme keeps an Enum's values in a set: the order in the message is not fixed.
    expect(protocol.body.faultstring).toMatch(/^Invalid input for field\/attribute protocol\. Value: 'QUIC'\. Value should be one of: /);
    expect((await listener(lb, 6443)).status).toBe(201);
    expect(fault(await listener(lb, 6443, "HTTP"))).toEqual([
      409,
      "Another Listener on this Load Balancer is already using protocol TCP and protocol_port 6443",
    ]);
    expect((await api("GET", `${LB}/loadbalancers/${lb}`)).body.loadbalancer.provisioning_status).toBe("ACTIVE");
    expect((await listener(lb, 6443, "UDP")).status).toBe(201);
  });

  it("refuses an unknown lb_algorithm, a pool protocol its listener cannot carry, and a second default pool", async () => {
    const lb = await loadBalancer();
    const listenerId = (await listener(lb)).body.listener.id;
    const pool = (body: Record<string, unknown>) =>
      api("POST", `${LB}/pools`, { pool: { listener_id: listenerId, protocol: "TCP", lb_algorithm: "ROUND_ROBIN", ...body } });
    const algorithm = await pool({ lb_algorithm: "RANDOM" });
    expect(algorithm.status).toBe(400);
    expect(algorithm.body.faultstring).toMatch(
      /^Invalid input for field\/attribute lb_algorithm\. Value: 'RANDOM'\. Value should be one of: /,
    );
    expect(fault(await pool({ protocol: "UDP" }))).toEqual([
      400,
      "Validation failure: The pool protocol 'UDP' is invalid while the listener protocol is 'TCP'.",
    ]);
    expect((await pool({})).status).toBe(201);
    await settle(lb);
    expect(fault(await pool({}))).toEqual([409, "This listener already has a default pool"]);
  });

  it("checks a member's address and subnet as Octavia does (reserved addresses, a subnet that exists, not the address's place in it), refuses duplicates and changes while the pool is pending, and shows members NO_MONITOR until a monitor", async () => {
    const lb = await loadBalancer();
    const listenerId = (await listener(lb)).body.listener.id;
    const pool = (await api("POST", `${LB}/pools`, { pool: { listener_id: listenerId, protocol: "TCP", lb_algorithm: "ROUND_ROBIN" } }))
      .body.pool.id;
    const member = (body: Record<string, unknown>) =>
      api("POST", `${LB}/pools/${pool}/members`, { member: { address: "10.7.0.10", protocol_port: 6443, subnet_id: subnet, ...body } });
    expect(fault(await member({}))).toEqual([409, `Pool ${pool} is immutable and cannot be updated.`]);
    await settle(lb);
    expect(fault(await member({ address: "169.254.169.254" }))).toEqual([400, "169.254.169.254 is not a valid option for member address"]);
    const missing = "00000000-0000-0000-0000-000000000000";
    expect(fault(await member({ subnet_id: missing }))).toEqual([400, `Subnet ${missing} not found.`]);
    expect(fault(await member({ subnet_id: "" }))).toEqual([
      400,
      "Invalid input for field/attribute subnet_id. Value: ''. Value should be UUID format",
    ]);
    const outside = await member({ address: "192.168.1.10" });
    expect(outside.status).toBe(201);
    await settle(lb);
    expect((await member({})).status).toBe(201);
    await settle(lb);
    expect(fault(await member({}))).toEqual([409, "Another member on this pool is already using ip 10.7.0.10 on protocol_port 6443"]);
    const shown = await api("GET", `${LB}/pools/${pool}/members/${outside.body.member.id}`);
    expect(shown.body.member).toMatchObject({ provisioning_status: "ACTIVE", operating_status: "NO_MONITOR" });
    // octavia/api/v2/types/pool.py sets healthmonitor_id from the pool's monitor alone.
    const healthMonitorId = async () => (await api("GET", `${LB}/pools/${pool}`)).body.pool.healthmonitor_id;
    expect(await healthMonitorId()).toBeUndefined();

    const monitor = (body: Record<string, unknown>) =>
      api("POST", `${LB}/healthmonitors`, { healthmonitor: { pool_id: pool, type: "TCP", delay: 5, timeout: 3, max_retries: 3, ...body } });
    expect(fault(await monitor({ max_retries: 11 }))).toEqual([
      400,
      "Invalid input for field/attribute max_retries. Value: '11'. Value should be lower or equal to 10",
    ]);
    expect(fault(await monitor({ url_path: "/healthz" }))).toEqual([400, "url_path is not a valid option for health monitors of type TCP"]);
    // Octavia has no rule tying delay to timeout.
    const monitorId = (await monitor({ delay: 1, timeout: 5 })).body.healthmonitor.id;
    expect(await healthMonitorId()).toBe(monitorId);
    await settle(lb);
    expect(fault(await monitor({}))).toEqual([409, "This pool already has a health monitor"]);
    const monitored = await api("GET", `${LB}/pools/${pool}/members/${outside.body.member.id}`);
    expect(monitored.body.member.operating_status).toBe("ONLINE");
    const https = await api("POST", `${LB}/healthmonitors`, {
      healthmonitor: { pool_id: pool, type: "HTTPS", delay: 5, timeout: 3, max_retries: 3 },
    });
    expect(https.status).toBe(409);
  });

  it("updates a pool's members in a batch: new ones created, matched ones updated, missing ones deleted, nothing to do leaves the load balancer ACTIVE", async () => {
    const lb = await loadBalancer();
    const listenerId = (await listener(lb)).body.listener.id;
    const pool = (await api("POST", `${LB}/pools`, { pool: { listener_id: listenerId, protocol: "TCP", lb_algorithm: "ROUND_ROBIN" } }))
      .body.pool.id;
    await settle(lb);
    const batch = (addresses: string[]) =>
      api("PUT", `${LB}/pools/${pool}/members`, {
        members: addresses.map((address) => ({ address, protocol_port: 6443, subnet_id: subnet })),
      });
    expect((await batch(["10.7.0.10", "10.7.0.11"])).status).toBe(202);
    expect((await api("GET", `${LB}/pools/${pool}`)).body.pool.provisioning_status).toBe("PENDING_UPDATE");
    expect(fault(await batch(["10.7.0.10"]))).toEqual([409, `Pool ${pool} is immutable and cannot be updated.`]);
    await settle(lb);
    // Matched by address and port: 10.7.0.11 is updated, 10.7.0.10 deleted.
    expect((await batch(["10.7.0.11"])).status).toBe(202);
    await settle(lb);
    const members = (await api("GET", `${LB}/pools/${pool}/members`)).body.members;
    expect(members.map((m: { address: string }) => m.address)).toEqual(["10.7.0.11"]);
    expect((await batch([])).status).toBe(202);
    await settle(lb);
    expect((await batch([])).status).toBe(202);
    expect((await api("GET", `${LB}/loadbalancers/${lb}`)).body.loadbalancer.provisioning_status).toBe("ACTIVE");
  });
});

describe("Glance", () => {
  const ids = async (query: string) => ((await api("GET", `/image/v2/images?${query}`)).body.images as { id: string }[]).map((i) => i.id);

  it("lists images by exact name and status, as the provider's name lookup asks, leaving community images out unless asked for", async () => {
    const community = "7e2f4a6b-1c3d-4e5f-8a9b-0c1d2e3f4a5b";
    double.glance.seedImage(community, "Ubuntu 24.04", "community");
    // What openstack_images_image_v2 sends for name = "Ubuntu 24.04", most_recent = true.
    expect(await ids("name=Ubuntu+24.04&sort=name%3Aasc&status=active")).toEqual([NOBLE_IMAGE.id]);
    expect(await ids("name=Ubuntu")).toEqual([]);
    expect(await ids("name=Ubuntu+24.04&status=queued")).toEqual([]);
    expect(await ids("name=Ubuntu+24.04&visibility=all")).toEqual([NOBLE_IMAGE.id, community]);
    expect(await ids("name=Ubuntu+24.04&visibility=community")).toEqual([community]);
    expect(await ids("visibility=public&member_status=all")).toEqual([NOBLE_IMAGE.id, WIKI_IMAGE.id]);
  });
});

/** A server body for the seeded image and m1.large. */
function server(name: string): Record<string, unknown> {
  return { name, imageRef: WIKI_IMAGE.id, flavorRef: "4" };
}
