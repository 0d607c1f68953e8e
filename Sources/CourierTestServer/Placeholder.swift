import NIOPosix
import NIOHTTP1
