"""walklistd's gRPC server reflection driven as a generic client (grpcurl, grpcui, Postman) drives it.

Debian's grpcio opens ServerReflectionInfo streams (v1 and v1alpha, messages generated from
Debian's grpc-proto by run.sh), lists the services, fetches a service's file with its imports,
builds that service's messages from the descriptors alone (no code generated from proto/ for
this part: python's descriptor_pool and message_factory) and calls its methods with them. Names
nobody declares are an ErrorResponse NOT_FOUND on a stream that goes on. Reflection needs no key.
"""
import importlib.util
import os
import queue
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_grpc as t  # noqa: E402  (the harness: walklistd, keys)

import grpc  # noqa: E402
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PB2_DIR = os.environ["WALKLIST_REFLECTION_PB2_DIR"]
REFLECTION = {version: load(f"reflection_{version}_pb2", os.path.join(PB2_DIR, version, "reflection_pb2.py"))
              for version in ("v1", "v1alpha")}
NOT_FOUND = grpc.StatusCode.NOT_FOUND.value[0]
WALKLIST_SERVICES = {"walklist.v1.LocateListService", "walklist.v1.StockService",
                     "walklist.v1.ScannerService", "walklist.v1.InventoryService"}
SERVED = WALKLIST_SERVICES | {"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
                              "grpc.reflection.v1alpha.ServerReflection"}


class Stream:
    """One ServerReflectionInfo stream, without a key: ask() sends a request and returns its answer."""

    def __init__(self, channel, version="v1"):
        self.pb = REFLECTION[version]
        self.requests = queue.Queue()
        info = channel.stream_stream(f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
                                     request_serializer=self.pb.ServerReflectionRequest.SerializeToString,
                                     response_deserializer=self.pb.ServerReflectionResponse.FromString)
        self.responses = info(iter(self.requests.get, None), timeout=t.PATIENCE_S)

    def ask(self, **fields):
        request = self.pb.ServerReflectionRequest(host="localhost", **fields)
        self.requests.put(request)
        response = next(self.responses)
        assert response.original_request == request, response
        assert response.valid_host == "localhost", response
        return response

    def files(self, **fields):
        """The FileDescriptorProtos of a file request's answer, by name, in the answer's order."""
        response = self.ask(**fields)
        assert response.WhichOneof("message_response") == "file_descriptor_response", response
        protos = [descriptor_pb2.FileDescriptorProto.FromString(b)
                  for b in response.file_descriptor_response.file_descriptor_proto]
        return {p.name: p for p in protos}

    def close(self):
        """Half-closes the stream: it ends with OK and nothing more."""
        self.requests.put(None)
        return list(self.responses)


def message_class(pool, name):
    descriptor = pool.FindMessageTypeByName(name)
    get_class = getattr(message_factory, "GetMessageClass", None)  # protobuf >= 4.22
    return get_class(descriptor) if get_class else message_factory.MessageFactory(pool).GetPrototype(descriptor)


def build_pool(files):
    """A descriptor pool of the reflected files alone, each added after its imports."""
    pool = descriptor_pool.DescriptorPool()
    added, waiting = set(), dict(files)
    while waiting:
        ready = [name for name, proto in waiting.items() if set(proto.dependency) <= added]
        assert ready, f"imports never sent: {waiting.keys()} after {added}"
        for name in ready:
            pool.Add(waiting.pop(name))
            added.add(name)
    return pool


class ReflectionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        t.ctl("org", "create", "grpc-reflect")
        cls.key = t.key("grpc-reflect", "lists:write")
        cls.server = t.Walklistd("--rate-limit-locate-lists", t.HIGH, "--rate-limit-shared", t.HIGH)
        cls.channel = cls.server.channel()

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        assert cls.server.stop() == 0

    def test_lists_every_service(self):
        for version in REFLECTION:
            stream = Stream(self.channel, version)
            response = stream.ask(list_services="")
            self.assertEqual({s.name for s in response.list_services_response.service}, SERVED, version)
            self.assertEqual(stream.close(), [])

    def test_reflection_driven_client_calls_a_method(self):
        stream = Stream(self.channel)
        files = stream.files(file_containing_symbol="walklist.v1.LocateListService")
        self.assertEqual(list(files)[0], "walklist/v1/locate_list.proto")
        self.assertIn("google/protobuf/timestamp.proto", files)
        stream.close()
        pool = build_pool(files)
        service = pool.FindServiceByName("walklist.v1.LocateListService")

        def method(name):
            m = service.methods_by_name[name]
            request, response = message_class(pool, m.input_type.full_name), message_class(pool, m.output_type.full_name)
            call = self.channel.unary_unary(f"/{service.full_name}/{name}",
                                            request_serializer=request.SerializeToString,
                                            response_deserializer=response.FromString)
            return request, call

        create_request, create = method("CreateLocateList")
        created = create(create_request(name="Reflected", codes=["SKU-1", "SKU-2"]),
                         metadata=t.metadata(self.key), timeout=t.PATIENCE_S)
        self.assertEqual((created.name, created.codes_count), ("Reflected", 2))
        get_request, get = method("GetLocateList")
        got = get(get_request(id=created.id), metadata=t.metadata(self.key), timeout=t.PATIENCE_S)
        self.assertEqual((got.name, list(got.codes), got.state), ("Reflected", ["SKU-1", "SKU-2"], "pending"))
        self.assertGreater(got.created_at.seconds, 0)  # a Timestamp built from the reflected import
        self.assertEqual(t.sql(f"SELECT name FROM locate_lists WHERE id = '{created.id}'"), [["Reflected"]])

        # Health, as a probe that knows nothing but reflection would call it (no key).
        alpha = Stream(self.channel, "v1alpha")
        health = build_pool(alpha.files(file_containing_symbol="grpc.health.v1.Health"))
        alpha.close()
        check_request = message_class(health, "grpc.health.v1.HealthCheckRequest")
        check_response = message_class(health, "grpc.health.v1.HealthCheckResponse")
        check = self.channel.unary_unary("/grpc.health.v1.Health/Check",
                                         request_serializer=check_request.SerializeToString,
                                         response_deserializer=check_response.FromString)
        serving = health.FindEnumTypeByName("grpc.health.v1.HealthCheckResponse.ServingStatus")
        self.assertEqual(check(check_request(service="")).status, serving.values_by_name["SERVING"].number)

    def test_every_kind_of_symbol_and_imports_once_per_stream(self):
        stream = Stream(self.channel)
        for symbol, file in [("walklist.v1.StockService.ExportStock", "walklist/v1/stock.proto"),
                             ("walklist.v1.LocateList", "walklist/v1/locate_list.proto"),
                             ("walklist.v1.LocateList.codes", "walklist/v1/locate_list.proto"),
                             ("grpc.health.v1.HealthCheckResponse.ServingStatus", "grpc/health/v1/health.proto"),
                             ("grpc.health.v1.HealthCheckResponse.SERVING", "grpc/health/v1/health.proto"),
                             ("google.protobuf.Timestamp", "google/protobuf/timestamp.proto"),
                             ("grpc.reflection.v1alpha.ServerReflection", "grpc/reflection/v1alpha/reflection.proto")]:
            self.assertEqual(list(stream.files(file_containing_symbol=symbol))[0], file, symbol)
        # stock.proto's imports went with the first answer: asked again, the file comes alone.
        self.assertEqual(list(stream.files(file_by_filename="walklist/v1/stock.proto")), ["walklist/v1/stock.proto"])
        self.assertEqual(stream.close(), [])
        # A new stream sends them again.
        fresh = Stream(self.channel)
        self.assertEqual(set(fresh.files(file_by_filename="walklist/v1/stock.proto")),
                         {"walklist/v1/stock.proto", "google/protobuf/timestamp.proto",
                          "google/protobuf/wrappers.proto"})
        fresh.close()

    def test_unknown_names_are_not_found_and_the_stream_goes_on(self):
        stream = Stream(self.channel)
        for fields, what in [({"file_containing_symbol": "walklist.v1.NoSuchService"}, "walklist.v1.NoSuchService"),
                             ({"file_containing_symbol": "walklist.v1"}, "walklist.v1"),  # a package is no symbol
                             ({"file_by_filename": "walklist/v1/nope.proto"}, "walklist/v1/nope.proto"),
                             ({"all_extension_numbers_of_type": "walklist.v1.Nope"}, "walklist.v1.Nope"),
                             ({"file_containing_extension": stream.pb.ExtensionRequest(
                                 containing_type="walklist.v1.LocateList", extension_number=100)},
                              "walklist.v1.LocateList")]:
            response = stream.ask(**fields)
            self.assertEqual(response.WhichOneof("message_response"), "error_response", fields)
            self.assertEqual(response.error_response.error_code, NOT_FOUND, fields)
            self.assertIn(what, response.error_response.error_message)
        # A known message has no extensions: an empty list, not an error.
        numbers = stream.ask(all_extension_numbers_of_type="walklist.v1.LocateList").all_extension_numbers_response
        self.assertEqual((numbers.base_type_name, list(numbers.extension_number)), ("walklist.v1.LocateList", []))
        # Nothing was counted as sent: the next file comes with its imports.
        self.assertIn("google/protobuf/timestamp.proto",
                      stream.files(file_containing_symbol="walklist.v1.LocateListService"))
        self.assertEqual(stream.close(), [])

    def test_a_request_that_is_no_reflection_request_ends_the_stream(self):
        info = self.channel.stream_stream("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo")
        with self.assertRaises(grpc.RpcError) as caught:
            list(info(iter([b"\xff\xff\xff"]), timeout=t.PATIENCE_S))
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, caught.exception.details())

    def test_calls_are_counted_and_logged(self):
        Stream(self.channel).close()
        t.poll("the stream's metric", lambda: self.server.metric(
            "walklist_grpc_calls_total",
            '{method="/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",code="OK"}') >= 1)
        t.poll("the stream's log line", lambda: '"route":"/grpc.reflection.v1.ServerReflection/'
               'ServerReflectionInfo","code":"OK"' in self.server.text())


if __name__ == "__main__":
    unittest.main()
