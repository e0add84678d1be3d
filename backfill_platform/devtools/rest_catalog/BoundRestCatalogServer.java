// Iceberg's RESTCatalogServer on one address: the server itself (1.11) binds every interface (Jetty's
// `new Server(port)`, no host setting), unauthenticated. This starts the same catalog and servlet, read from the
// same CATALOG_* variables, on a connector bound to REST_HOST (default 127.0.0.1) and CATALOG_REST_PORT.
// Run as a single-file source program (`java -cp <server classpath> BoundRestCatalogServer.java`): no build step.
// The server's classes are package-private, hence reflection (a classpath class, open to it).

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import org.eclipse.jetty.compression.gzip.GzipCompression;
import org.eclipse.jetty.compression.server.CompressionHandler;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public class BoundRestCatalogServer {
  public static void main(String[] args) throws Exception {
    String host = System.getenv().getOrDefault("REST_HOST", "127.0.0.1");
    int port = Integer.parseInt(System.getenv().getOrDefault("CATALOG_REST_PORT", "8181"));

    Class<?> serverClass = Class.forName("org.apache.iceberg.rest.RESTCatalogServer");
    Constructor<?> newServer = serverClass.getDeclaredConstructor();
    newServer.setAccessible(true);
    Method initialize = serverClass.getDeclaredMethod("initializeBackendCatalog");
    initialize.setAccessible(true);
    Object context = initialize.invoke(newServer.newInstance());

    Class<?> contextClass = Class.forName("org.apache.iceberg.rest.RESTCatalogServer$CatalogContext");
    Class<?> adapterClass = Class.forName("org.apache.iceberg.rest.RESTServerCatalogAdapter");
    Constructor<?> newAdapter = adapterClass.getDeclaredConstructor(contextClass);
    newAdapter.setAccessible(true);
    Object adapter = newAdapter.newInstance(context);
    Class<?> servletClass = Class.forName("org.apache.iceberg.rest.RESTCatalogServlet");
    Object servlet = servletClass
        .getConstructor(Class.forName("org.apache.iceberg.rest.RESTCatalogAdapter"))
        .newInstance(adapter);

    ServletContextHandler handler = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    handler.addServlet(new ServletHolder((jakarta.servlet.Servlet) servlet), "/*");
    CompressionHandler compression = new CompressionHandler();
    compression.putCompression(new GzipCompression());
    handler.insertHandler(compression);

    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost(host);
    connector.setPort(port);
    server.addConnector(connector);
    server.setHandler(handler);
    server.start();
    server.join();
  }
}
